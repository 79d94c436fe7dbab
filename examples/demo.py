"""The active-active demo behind `make demo`.

Three local DCs (real Kafka brokers from `aa dev up`), a full mesh of mirrors (`aa run --dc X`
per DC, as operators run them), applications in SF and NYC ordering different books for the same
user within the same second, every DC computing the same converged state, and the nightly
reconcile job proving the DCs agree.

Then SF goes down: a consumer group fails over to NYC (`aa failover`, dry run first), SF comes
back and the group fails back (`aa failback`); the reconcile report closes the story.

On any error, Ctrl-C or SIGTERM it stops what it started (the mirrors, and the brokers it started
itself) and says so. On success the brokers keep running for you to explore, unless ``--stop``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import yaml

from aa.dev import cluster
from examples.steps import run_interruptibly, say

DCS = ("SF", "NYC", "LON")
TOPIC = "orders"
METRICS_BASE_PORT = 9464


@dataclass
class Demo:
    """What the demo started, so that it can stop exactly that."""

    home: Path
    out: Path
    clusters: list[cluster.DevCluster] = field(default_factory=list)
    started: list[cluster.DevCluster] = field(default_factory=list)
    mirrors: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)
    free: bool = False

    @property
    def bootstraps(self) -> dict[str, str]:
        return {c.name: c.bootstrap for c in self.clusters}

    def plan(self, free: bool) -> list[cluster.DevCluster]:
        known = {c.name: c for c in cluster.load(self.home)}
        if not free:
            return cluster.plan(list(DCS), self.home)
        ports = iter(cluster.free_ports(2 * len(DCS)))
        return [
            known.get(dc) or cluster.DevCluster(dc, next(ports), next(ports), self.home / dc)
            for dc in DCS
        ]

    def start_clusters(self, free: bool) -> None:
        say(f"1. three datacenters: real Kafka brokers, one per DC (aa dev up --home {self.home})")
        planned = self.plan(free)
        self.clusters = planned
        for c, started in cluster.up(planned):
            if started:
                self.started.append(c)
            state = "started" if started else "already running"
            print(f"   {c.name:<4} {c.bootstrap:<18} {state}")

    def stop_mirrors(self) -> list[str]:
        for p in self.mirrors.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        stopped = []
        for dc, p in list(self.mirrors.items()):
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
            stopped.append(dc)
        self.mirrors.clear()
        return stopped

    def stop_everything(self) -> None:
        """Stop the mirrors and the brokers this run started (never ones it found running)."""
        mirrors = self.stop_mirrors()
        brokers = cluster.stop_all(self.started) if self.started else []
        self.started.clear()
        print(
            f"   stopped: mirrors {', '.join(mirrors) or 'none running'}; "
            f"brokers {', '.join(brokers) or 'none started by this run'}",
            flush=True,
        )

    def mirror_port(self, dc: str) -> int:
        if dc in self.metrics:  # a restart keeps its URL
            return int(self.metrics[dc].rsplit(":", 1)[1])
        port = METRICS_BASE_PORT + DCS.index(dc)
        return port if not self.free and cluster.bindable(port) else cluster.free_ports(1)[0]

    def start_mirror(self, dc: str, config: Path) -> None:
        """`aa run --dc DC` as a process of its own, its log in the output folder."""
        port = self.mirror_port(dc)
        log_path = self.out / f"aa-run-{dc}.log"
        with log_path.open("ab") as log:
            self.mirrors[dc] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "aa.cli.main",
                    "--log-format",
                    "json",
                    "run",
                    "--config",
                    str(config),
                    "--dc",
                    dc,
                    "--metrics-port",
                    str(port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                # a terminal's Ctrl-C reaches the demo only; it stops the mirrors in order
                start_new_session=True,
            )
        self.metrics[dc] = f"http://127.0.0.1:{port}"
        pid = self.mirrors[dc].pid
        print(f"   {dc}: aa run pid {pid}, {self.metrics[dc]}/metrics, log {log_path}")

    def stop_mirror(self, dc: str) -> None:
        p = self.mirrors.pop(dc, None)
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

    def status_args(self) -> list[str]:
        """`--metrics DC=URL` for every running mirror (what `aa status` joins in)."""
        return [a for dc, url in self.metrics.items() for a in ("--metrics", f"{dc}={url}")]

    def check_mirrors(self) -> None:
        """A mirror that exited is an error of the demo, with its log named."""
        for dc, p in self.mirrors.items():
            if p.poll() is not None:
                raise RuntimeError(
                    f"aa run --dc {dc} exited with {p.returncode}: see {self.out}/aa-run-{dc}.log"
                )


def write_topology(folder: Path, clusters: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "topology.yaml"
    doc = {
        "datacenters": {dc: {"bootstrap": b} for dc, b in clusters.items()},
        "flows": "full-mesh",
        "topics": {"include": [TOPIC]},
        "loop_prevention": "headers",
        "heartbeats": {"enabled": True, "interval_s": 1.0},
        "checkpoints": {"enabled": True, "interval_s": 2.0, "groups": ["shipping"]},
        # the lag gauges step 6 prints are read every 2 s (default 10 s), so they are fresh
        "metrics": {"lag_interval_s": 2.0},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def start_mirrors(demo: Demo, config: Path) -> None:
    say("2. full-mesh mirrors: `aa run --dc X` in each DC (6 flows)")
    for dc in DCS:
        demo.start_mirror(dc, config)


async def ensure_topic(clusters: dict[str, str]) -> None:
    from aa.admin import ClusterAdmin

    for dc, bootstrap in clusters.items():
        async with ClusterAdmin(dc, bootstrap_servers=bootstrap) as admin:
            await admin.create_topics([(TOPIC, 3, {})])


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m examples.demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--keys", type=int, default=500, help="users with concurrent writes")
    parser.add_argument("--out", type=Path, default=Path("out/demo"), help="logs and reports")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="state folder of the clusters (default: $AA_DEV_HOME or ~/.local/state/aa/dev)",
    )
    parser.add_argument(
        "--free-ports",
        action="store_true",
        help="put new brokers on free ports instead of 19092/29092/39092 (parallel runs)",
    )
    parser.add_argument(
        "--stop", action="store_true", help="stop the brokers it started when it is done"
    )
    parser.add_argument(
        "--no-reconcile", action="store_true", help="skip the Spark job (quicker, for developers)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("AA_LOG_FORMAT", "console")
    signal.signal(signal.SIGTERM, _sigterm)
    began = time.monotonic()
    home = args.home.expanduser() if args.home else cluster.state_root()
    args.out.mkdir(parents=True, exist_ok=True)
    demo = Demo(home, args.out, free=args.free_ports)
    try:
        demo.start_clusters(args.free_ports)
        asyncio.run(ensure_topic(demo.bootstraps))
        config = write_topology(args.out, demo.bootstraps)
        start_mirrors(demo, config)
        from examples.demo_story import story

        run_interruptibly(story(demo, config, args))
    except KeyboardInterrupt:
        say("interrupted: stopping what the demo started")
        demo.stop_everything()
        return 130
    except Exception as exc:  # noqa: BLE001 - any failure: clean up, name it, keep the trace
        trace = args.out / "demo-error.log"
        trace.write_text(traceback.format_exc())
        say(f"the demo failed: {type(exc).__name__}: {exc}")
        print(f"   full traceback in {trace}; mirror logs in {args.out}", flush=True)
        print("   stopping what the demo started", flush=True)
        demo.stop_everything()
        return 1
    demo.stop_mirrors()
    if args.stop:
        say("stopping the brokers this run started (--stop)")
        demo.stop_everything()
        tail = "the brokers it started are stopped"
    else:
        tail = (
            f"the clusters keep running (`aa dev --home {home} down` stops them, "
            "`... down --wipe` deletes their data)"
        )
    say(f"done in {time.monotonic() - began:.0f}s; {tail}")
    print(f"   reconcile report: {(args.out / 'reconcile' / 'report.html').resolve()}")
    print(f"   mirror logs: {args.out.resolve()}/aa-run-*.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
