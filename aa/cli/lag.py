"""`aa lag`: per flow and partition, how far the target is behind, from committed state."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import orjson

from aa.cli.options import flow_option, topology_command
from aa.cli.reach import require_reachable
from aa.config import load_config
from aa.errors import AaError
from aa.lag import PartitionLag, flow_lag


def register(sub: Any) -> None:
    p = topology_command(sub, "lag", "replication lag per flow and partition (records, seconds)")
    p.add_argument("--flow", help="only this flow, e.g. SF->NYC")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_lag)


def format_lag(rows: list[PartitionLag]) -> str:
    table = [("flow", "topic", "partition", "end", "copied", "lag", "lag_s")]
    for r in rows:
        secs = "-" if r.seconds is None else f"{r.seconds:.1f}"
        table.append(
            (r.flow, r.topic, str(r.partition), str(r.end), str(r.copied), str(r.records), secs)
        )
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)) for t in table)


async def all_lag(config: Path, only: str | None) -> list[PartitionLag]:
    topology = load_config(config)
    only = flow_option(only, topology)
    names = [f.name for f in topology.flows]
    if only is not None and only not in names:
        raise AaError(f"--flow {only}: no such flow; flows: {', '.join(names)}")
    flows = [topology.flow(only)] if only else list(topology.flows)
    await require_reachable(
        topology,
        [dc for f in flows for dc in (f.source, f.target)],
        hint="or pass --flow for a flow between reachable DCs",
    )
    out: list[PartitionLag] = []
    for f in flows:
        out += await flow_lag(topology, f)
    return out


def _lag(args: argparse.Namespace) -> int:
    rows = asyncio.run(all_lag(args.config, args.flow))
    if args.json:
        print(orjson.dumps([dataclasses.asdict(r) | {"records": r.records} for r in rows]).decode())
    else:
        print(format_lag(rows))
    return 0
