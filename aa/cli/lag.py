"""`aa lag`: per flow and partition, how far the target is behind, from committed state."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import orjson

from aa.cli.options import topology_command
from aa.cli.reach import require_reachable
from aa.config import load_config
from aa.errors import AaError
from aa.lag import PartitionLag, flow_lag


def register(sub: Any) -> None:
    p = topology_command(sub, "lag", "replication lag per flow and partition (records, seconds)")
    p.add_argument("--flow", help="only this flow, e.g. SF->NYC")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_lag)


FIELDS = ("flow", "topic", "partition", "end", "copied", "lag_records", "lag_seconds")
"""The table's columns and the ``--json`` fields: the same names (and those of `aa status`)."""


def lag_row(r: PartitionLag) -> dict[str, Any]:
    """One partition's row, keyed by :data:`FIELDS`."""
    values = (r.flow, r.topic, r.partition, r.end, r.copied, r.records, r.seconds)
    return dict(zip(FIELDS, values, strict=True))


def format_lag(rows: list[PartitionLag]) -> str:
    table: list[tuple[str, ...]] = [FIELDS]
    for r in rows:
        row = lag_row(r)
        secs = "-" if r.seconds is None else f"{r.seconds:.1f}"
        table.append(tuple(secs if k == "lag_seconds" else str(row[k]) for k in FIELDS))
    widths = [max(len(t[i]) for t in table) for i in range(len(FIELDS))]
    lines = ("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)) for t in table)
    return "\n".join(line.rstrip() for line in lines)


async def all_lag(config: Path, only: str | None) -> list[PartitionLag]:
    topology = load_config(config)
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
        print(orjson.dumps([lag_row(r) for r in rows]).decode())
    else:
        print(format_lag(rows))
    return 0
