"""The active-active demo behind `make demo`.

Three local DCs (real Kafka brokers from `aa dev up`), a full mesh of mirrors (`aa run --dc X`
per DC, as operators run them), applications in SF and NYC ordering different books for the same
user within the same second, every DC computing the same converged state, and the nightly
reconcile job proving the DCs agree.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from aa.dev import cluster

DCS = ("SF", "NYC", "LON")
TOPIC = "orders"


def say(msg: str) -> None:
    print(f"\n== {msg}", flush=True)


def start_clusters() -> dict[str, str]:
    say("1. three datacenters: real Kafka brokers, one per DC (aa dev up)")
    root = cluster.state_root()
    planned = cluster.plan(list(DCS), root)
    for c, started in cluster.up(planned):
        print(f"   {c.name:<4} {c.bootstrap:<18} {'started' if started else 'already running'}")
    return {c.name: c.bootstrap for c in planned}


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


def start_mirrors(config: Path, folder: Path) -> list[subprocess.Popen[bytes]]:
    say("2. full-mesh mirrors: `aa run --dc X` in each DC (6 flows)")
    procs = []
    for i, dc in enumerate(DCS):
        log = (folder / f"aa-run-{dc}.log").open("ab")
        cmd = [
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
            str(9464 + i),
        ]
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
        print(
            f"   {dc}: pid {procs[-1].pid}, metrics http://127.0.0.1:{9464 + i}/metrics, "
            f"log {folder / f'aa-run-{dc}.log'}"
        )
    return procs


def stop_mirrors(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()


async def ensure_topic(clusters: dict[str, str]) -> None:
    from aa.admin import ClusterAdmin

    for dc, bootstrap in clusters.items():
        async with ClusterAdmin(dc, bootstrap_servers=bootstrap) as admin:
            await admin.create_topics([(TOPIC, 3, {})])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=500, help="users with concurrent writes")
    parser.add_argument("--out", type=Path, default=Path("out/demo"))
    args = parser.parse_args(argv)
    os.environ.setdefault("AA_LOG_FORMAT", "console")
    began = time.monotonic()
    clusters = start_clusters()
    asyncio.run(ensure_topic(clusters))
    config = write_topology(args.out, clusters)
    procs = start_mirrors(config, args.out)
    try:
        from examples.demo_story import story

        asyncio.run(story(clusters, config, args))
    finally:
        stop_mirrors(procs)
    say(
        f"done in {time.monotonic() - began:.0f}s; the clusters keep running "
        "(`aa dev down` stops them, `aa dev down --wipe` deletes their data)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
