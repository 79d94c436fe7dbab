"""A stand-in for ``aa run`` while the CLI is being written: runs the real mirror engine
(:class:`aa.mirror.supervisor.Supervisor` and :class:`aa.mirror.flow.MirrorFlow`) on the bench's
topology YAML with full-mesh headers routing (forward only records written locally).

Used only with ``python -m bench.run --aa-standin``; the default runs ``aa run`` itself.
Accepts the same arguments as ``aa run`` (``--config FILE`` and ``--flow A->B`` or ``--dc B``).
"""

from __future__ import annotations

import argparse
import asyncio

import yaml

from aa.logs import configure
from aa.mirror.settings import FlowSettings
from aa.mirror.supervisor import Supervisor
from aa.observe.metrics import Metrics
from tests.helpers.mirror import OriginOnlyRouter


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log-format", default="json")
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--config", required=True)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--flow")
    group.add_argument("--dc")
    args = parser.parse_args()
    configure(json=True, level="INFO")
    with open(args.config) as f:
        doc = yaml.safe_load(f)
    flows = [args.flow] if args.flow else [f for f in doc["flows"] if f.endswith(f"->{args.dc}")]
    pattern = "^(" + "|".join(doc["topics"]["include"]) + ")$"
    tuning = doc.get("tuning", {})
    pairs = []
    for flow in flows:
        src, dst = flow.split("->")
        settings = FlowSettings(
            source=src,
            target=dst,
            source_client={"bootstrap_servers": doc["datacenters"][src]["bootstrap"]},
            target_client={"bootstrap_servers": doc["datacenters"][dst]["bootstrap"]},
            group_id=f"aa-mirror.{src}-{dst}",
            max_poll_records=tuning.get("max_poll_records", 5000),
            fetch_max_bytes=tuning.get("fetch_max_bytes", 64 << 20),
            max_partition_fetch_bytes=tuning.get("max_partition_fetch_bytes", 4 << 20),
            batch_size=tuning.get("batch_size", 512 << 10),
            linger_ms=tuning.get("linger_ms", 5),
            compression=None if tuning.get("compression") == "none" else tuning.get("compression"),
        )
        pairs.append((settings, OriginOnlyRouter(src, dst, pattern)))
    asyncio.run(Supervisor(pairs, Metrics()).run())


if __name__ == "__main__":
    main()
