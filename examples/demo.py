"""The active-active demo behind `make demo`.

Three local DCs (real Kafka brokers from `aa dev up`), a full mesh of mirrors (`aa run --dc X`
per DC, as operators run them), applications in SF and NYC ordering different books for the same
user within the same second, every DC computing the same converged state, and the nightly
reconcile job proving the DCs agree.

On any error, Ctrl-C or SIGTERM it stops what it started (the mirrors, and the brokers it started
itself) and says so. On success the brokers keep running for you to explore, unless ``--stop``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import yaml

from aa.dev import cluster

DCS = ("SF", "NYC", "LON")
TOPIC = "orders"
METRICS_BASE_PORT = 9464


def say(msg: str) -> None:
    print(f"\n== {msg}", flush=True)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports the kernel reports free now."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


@dataclass
class Demo:
    """What the demo started, so that it can stop exactly that."""

    home: Path
    out: Path
    clusters: list[cluster.DevCluster] = field(default_factory=list)
    started: list[cluster.DevCluster] = field(default_factory=list)
    mirrors: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)

    @property
    def bootstraps(self) -> dict[str, str]:
        return {c.name: c.bootstrap for c in self.clusters}

    def plan(self, free: bool) -> list[cluster.DevCluster]:
        known = {c.name: c for c in cluster.load(self.home)}
        if not free:
            return cluster.plan(list(DCS), self.home)
        ports = iter(free_ports(2 * len(DCS)))
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
        for dc, p in self.mirrors.items():
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

    def mirror_port(self, i: int) -> int:
        port = METRICS_BASE_PORT + i
        return port if _port_free(port) else free_ports(1)[0]


def write_topology(folder: Path, clusters: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "topology.yaml"
    doc = {
        "datacenters": {dc: {"bootstrap": b} for dc, b in clusters.items()},
        "flows": "full-mesh",
        "topics": {"include": [TOPIC]},
        "loop_prevention": "headers",
        "heartbeats": {"enabled": False},
        "checkpoints": {"enabled": False},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def start_mirrors(demo: Demo, config: Path) -> None:
    say("2. full-mesh mirrors: `aa run --dc X` in each DC (6 flows)")
    for i, dc in enumerate(DCS):
        port = demo.mirror_port(i)
        log_path = demo.out / f"aa-run-{dc}.log"
        with log_path.open("ab") as log:
            demo.mirrors[dc] = subprocess.Popen(
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
            )
        demo.metrics[dc] = f"http://127.0.0.1:{port}"
        print(
            f"   {dc}: pid {demo.mirrors[dc].pid}, metrics {demo.metrics[dc]}/metrics, "
            f"log {log_path}"
        )


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
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("AA_LOG_FORMAT", "console")
    signal.signal(signal.SIGTERM, _sigterm)
    began = time.monotonic()
    home = args.home.expanduser() if args.home else cluster.state_root()
    args.out.mkdir(parents=True, exist_ok=True)
    demo = Demo(home, args.out)
    try:
        demo.start_clusters(args.free_ports)
        asyncio.run(ensure_topic(demo.bootstraps))
        config = write_topology(args.out, demo.bootstraps)
        start_mirrors(demo, config)
        from examples.demo_story import story

        asyncio.run(story(demo, config, args))
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
