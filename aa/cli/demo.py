"""`aa demo`: three local DCs, and (as the mirror lands) the full active-active story."""

from __future__ import annotations

import argparse
from typing import Any

from aa.dev import cluster


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the three-DC active-active demo on local clusters")
    p.add_argument("--dcs", default=",".join(cluster.DEFAULT_DCS))
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    root = cluster.state_root()
    planned = cluster.plan([n.strip() for n in args.dcs.split(",") if n.strip()], root)
    for c, started in cluster.up(planned):
        print(f"{c.name:<8} {c.bootstrap:<22} {'started' if started else 'already running'}")
    for s in cluster.status(root):
        print(f"{s.cluster.name:<8} {s.detail}")
    return 0
