"""`aa offsets translate`: a group's committed offsets in one DC, translated into another."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from typing import Any

import orjson

from aa.cli.options import group_option, topology_command
from aa.cli.reach import known_dc, require_reachable
from aa.config import load_config
from aa.failover.plan import render
from aa.failover.plans import moves_from_translation
from aa.offsets.live import translate_group


def register(sub: Any) -> None:
    p = sub.add_parser("offsets", help="offset syncs and translation")
    inner = p.add_subparsers(dest="offsets_command", metavar="SUBCOMMAND", required=True)
    t = topology_command(inner, "translate", "translate a group's committed offsets between DCs")
    group_option(t, "the application's consumer group whose offsets to translate")
    t.add_argument("--from", dest="source", required=True, help="the DC the group ran in")
    t.add_argument("--to", dest="target", required=True, help="the DC to translate into")
    t.add_argument("--json", action="store_true", help="print JSON")
    t.set_defaults(func=_translate)


def _translate(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    known_dc(topology, args.source, "--from")
    known_dc(topology, args.target, "--to")
    asyncio.run(
        require_reachable(
            topology,
            [args.source, args.target],
            hint=f"or, with {args.source} down, use the checkpoints: aa failover --translate",
        )
    )
    plans = asyncio.run(translate_group(topology, args.group, args.source, args.target))
    if args.json:
        print(orjson.dumps([dataclasses.asdict(p) for p in plans]).decode())
    else:
        title = f"group {args.group}: {args.source} -> {args.target}"
        print(render(title, moves_from_translation(plans, {})))
    return 0 if all(p.target_offset is not None for p in plans) else 1
