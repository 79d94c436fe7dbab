"""``aa plan``: print the flows of a topology and, per flow, the topics it will copy and to
which names (listing the clusters' topics), or only flows and patterns with ``--offline``."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from aa.admin import ClusterAdmin
from aa.cli.options import topology_command
from aa.cli.reach import CONNECT_TIMEOUT_S, ClusterUnreachableError, require_reachable, short_cause
from aa.config import Topology, client_kwargs, load_config
from aa.errors import AaError
from aa.logs import quiet_client_logs
from aa.policy.plan import TopicListing, build_plan, render


def register(subparsers: Any) -> None:
    p = topology_command(
        subparsers, "plan", "print the flows and the topics each will copy", __doc__
    )
    p.add_argument(
        "--dc", default=None, help="only the flows into this DC (what aa run --dc DC runs)"
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="do not connect: print the flows and topic patterns only",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    if args.dc is not None and args.dc not in topology.dc_names:
        raise AaError(f"--dc {args.dc}: unknown DC; known: {', '.join(topology.dc_names)}")
    listing = None
    if not args.offline:
        flows = topology.inbound(args.dc) if args.dc else topology.flows
        dcs = sorted({f.source for f in flows} | {f.target for f in flows})
        listing = asyncio.run(list_topics(topology, dcs))
    print(render(build_plan(topology, listing, dc=args.dc)))
    return 0


OFFLINE_HINT = "or pass --offline to plan without them"


async def list_topics(
    topology: Topology,
    dcs: list[str],
    timeout_s: float = CONNECT_TIMEOUT_S,
    hint: str = OFFLINE_HINT,
) -> TopicListing:
    """Topic name -> partition count in each of ``dcs``; every unreachable DC is named (with
    ``hint``)."""
    await require_reachable(topology, dcs, hint, timeout_s)
    with quiet_client_logs():
        results = await asyncio.gather(
            *(_topics(topology, dc, timeout_s) for dc in dcs), return_exceptions=True
        )
    failed = [str(r) for r in results if isinstance(r, BaseException)]
    if failed:
        raise ClusterUnreachableError("; ".join(failed) + f" ({hint})")
    return {dc: r for dc, r in zip(dcs, results, strict=True) if isinstance(r, dict)}


async def _topics(topology: Topology, name: str, timeout_s: float) -> dict[str, int]:
    dc = topology.datacenter(name)
    kwargs = client_kwargs(dc)
    kwargs["request_timeout_ms"] = int(timeout_s * 1000)
    try:
        async with asyncio.timeout(timeout_s):
            async with ClusterAdmin(name, **kwargs) as admin:
                topics = await admin.topics()
    except Exception as exc:  # aiokafka raises its own error classes, not only OSError
        raise ClusterUnreachableError(
            f"cannot list topics of DC {name} at {dc.bootstrap}: {short_cause(exc)}"
        ) from exc
    return {t.name: t.partitions for t in topics.values() if not t.internal}
