"""`aa failover` and `aa failback`: move a consumer group between DCs (dry-run by default)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from aa.cli.groups import unknown_group_error, unknown_group_hint
from aa.cli.options import group_option, topology_command
from aa.cli.progress import working
from aa.cli.reach import known_dc, require_reachable
from aa.config import Topology, client_kwargs, load_config
from aa.failover.failback import FailbackReport, failback_report
from aa.failover.plan import Move, PlanError, committable, render
from aa.failover.plans import group_checkpoints, plan_at_time, plan_from_checkpoints
from aa.offsets.groups import commit_group_offsets, group_offsets, group_state
from aa.times import FORMS, iso, parse_time

T = TypeVar("T")

# What each word in a plan's ``basis`` column means (docs/operations.md, "Reading a plan").
BASIS_LEGEND: tuple[tuple[str, str], ...] = (
    ("exact", "the first copied record at or after the group's position: no loss, no duplicate"),
    (
        "ahead",
        "the group was past what the flow had copied; it starts at the end of the copies: "
        "no loss, records copied later are read when they arrive",
    ),
    (
        "min-of-origins",
        "the partition holds records of several origin DCs; the smallest of their translated "
        "positions: no loss, some duplicates of the other origins' records",
    ),
    ("time", "the first record at or after that time, UTC (CreateTime survives the copy)"),
    (
        "checkpoint",
        "read from the checkpoints stored in the target DC (works with the old DC down)",
    ),
    ("before-syncs", "REFUSED: the offset is older than the oldest offset sync held"),
    ("gap", "REFUSED: no offset sync covers the offset (the flow does not copy this partition)"),
    ("not-mirrored", "REFUSED: no flow copies this topic into the target"),
)


def register(sub: Any) -> None:
    p = topology_command(
        sub, "failover", "move a consumer group to another DC (dry-run by default)"
    )
    _move_arguments(
        p,
        to="the DC the group moves to",
        source="the DC it ran in (when ambiguous)",
        create_group="with --execute: allow a group the target DC does not know yet (no offsets, "
        "no checkpoints); without it a mistyped name is refused",
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--translate", action="store_true", help="use the checkpoints stored in the target DC"
    )
    how.add_argument("--at", metavar="TIME", help=f"offsets for a time: {FORMS}")
    p.add_argument("--topic", action="append", default=[], help="topics for --at (repeatable)")
    p.set_defaults(func=_failover)

    b = topology_command(sub, "failback", "move a group back to its old DC after a failover")
    _move_arguments(
        b,
        to="the old primary to return to",
        source="the DC the group runs in now",
        create_group="with --execute: allow a group the old DC does not know",
    )
    b.add_argument(
        "--force", action="store_true", help="execute even if the resync has not caught up"
    )
    b.set_defaults(func=_failback)


def _move_arguments(p: Any, *, to: str, source: str, create_group: str) -> None:
    """What failover and failback share: the group, where it goes, and the dry-run guard."""
    group_option(p, "the application's consumer group to move")
    p.add_argument("--to", dest="target", required=True, help=to)
    p.add_argument("--from", dest="source", help=source)
    p.add_argument(
        "--execute", action="store_true", help="commit the plan (the group must be idle)"
    )
    p.add_argument("--create-group", action="store_true", help=create_group)


async def _failover_plan(
    topology: Topology, args: argparse.Namespace
) -> tuple[str, list[Move], bool]:
    """The plan's title, its moves, and whether checkpoints of the group exist in the target."""
    if args.translate:
        src, moves = await plan_from_checkpoints(topology, args.group, args.target, args.source)
        return f"group {args.group}: {src} -> {args.target} (checkpoints)", moves, True
    ts = parse_time(args.at, option="--at")
    topics = list(args.topic)
    checkpointed = False
    try:
        _, cps = await group_checkpoints(topology, args.group, args.target, args.source)
        checkpointed = True
        topics = topics or sorted({cp.target_topic for cp in cps})
    except PlanError:
        pass
    moves = await plan_at_time(topology, args.group, args.target, ts, topics)
    when = iso(ts) if iso(ts) == args.at else f"{iso(ts)} (--at {args.at})"
    return f"group {args.group}: -> {args.target} at {when}", moves, checkpointed


def legend(moves: Sequence[Move]) -> str:
    """One line per basis word used in ``moves``: what it means."""
    words = " ".join(m.basis for m in moves).replace("(", " ").split()
    used = [(w, text) for w, text in BASIS_LEGEND if w in words]
    return "\n".join(f"  {w}: {text}" for w, text in used)


def _print_plan(title: str, moves: Sequence[Move]) -> None:
    print(render(title, moves))
    if text := legend(moves):
        print("basis:\n" + text)


def _failover(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    if args.at is not None:
        parse_time(args.at, option="--at")  # a mistake is named before any connection
    known_dc(topology, args.target, "--to")
    if args.source is not None:
        known_dc(topology, args.source, "--from")
    asyncio.run(
        require_reachable(
            topology,
            [args.target],
            hint=f"the plan is read from {args.target} alone (the old DC may be down)",
        )
    )
    with working(f"reading checkpoints, offsets and the timestamp index in {args.target}"):
        title, moves, checkpointed = asyncio.run(_hinted(topology, args, _failover_plan))
    _print_plan(title, moves)
    unseen = not checkpointed and all(m.current is None for m in moves)
    hint = asyncio.run(unknown_group_hint(topology, args.target, args.group)) if unseen else None
    if hint and not args.execute:
        print(f"note: {args.target} has no group {args.group} yet; {hint}")
    return _maybe_execute(topology, args, moves, known=checkpointed)


async def _hinted(
    topology: Topology,
    args: argparse.Namespace,
    plan: Callable[[Topology, argparse.Namespace], Awaitable[T]],
) -> T:
    """``plan``; when it fails for a group the target DC does not know, the error says which
    groups it knows and the closest name."""
    try:
        return await plan(topology, args)
    except PlanError as exc:
        hint = await unknown_group_hint(topology, args.target, args.group)
        if hint is None:
            raise
        raise PlanError(f"{exc}; {hint}") from None


async def _check_group_known(topology: Topology, dc: str, group: str) -> None:
    """Refuse to create a group by committing offsets for a name ``dc`` has never seen."""
    client = client_kwargs(topology.datacenter(dc))
    if await group_offsets(client, group):
        return
    if (await group_state(client, group)).state != "Dead":
        return
    hint = await unknown_group_hint(topology, dc, group)
    if hint is not None:  # (None: the mirror stored checkpoints of it there)
        raise unknown_group_error(group, dc, hint)


def _maybe_execute(
    topology: Topology, args: argparse.Namespace, moves: list[Move], *, known: bool
) -> int:
    if not args.execute:
        print("dry run: nothing committed (add --execute to commit this plan)")
        return 0 if all(m.offset is not None for m in moves) else 1
    offsets = committable(moves)
    if not known and not args.create_group:
        asyncio.run(_check_group_known(topology, args.target, args.group))
    client = client_kwargs(topology.datacenter(args.target))
    asyncio.run(commit_group_offsets(client, args.target, args.group, offsets))
    print(f"committed {len(offsets)} partition offsets for group {args.group} in {args.target}")
    return 0


def _other(topology: Topology, target: str, source: str | None) -> str:
    if source is not None:
        return source
    others = [dc for dc in topology.dc_names if dc != target]
    if len(others) != 1:
        raise PlanError(f"--from: which DC does the group run in now? one of {', '.join(others)}")
    return others[0]


def _print_failback(r: FailbackReport, group: str) -> None:
    print(f"1. records in {r.old} that never reached {r.new} (the {r.old}->{r.new} flow copies")
    print("   them once it runs again; the plan below reads them in place):")
    for o in r.orphans:
        if o.records:
            print(f"   {o.topic}/{o.partition}: {o.records} records in [{o.copied_end}, {o.end})")
    if not any(o.records for o in r.orphans):
        print("   none")
    state = "complete" if r.resynced else "NOT complete"
    print(f"2. resync {r.new}->{r.old}: {state}")
    for p in r.resync:
        if p.records:
            print(f"   {p.topic}/{p.partition}: {p.records} records still to copy")
    _print_plan(f"3. group {group}: {r.new} -> {r.old}", r.moves)


def _failback(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    known_dc(topology, args.target, "--to")
    if args.source is not None:
        known_dc(topology, args.source, "--from")
    new = _other(topology, args.target, args.source)
    asyncio.run(
        require_reachable(
            topology, [args.target, new], hint="failback needs both DCs (it reads and compares)"
        )
    )
    with working(f"reading offset syncs, lag and the group's offsets in {new} and {args.target}"):
        report = asyncio.run(failback_report(topology, args.group, args.target, new))
    _print_failback(report, args.group)
    if args.execute and not report.resynced and not args.force:
        raise PlanError(
            f"the {new}->{args.target} flow has not copied everything yet: run it until "
            "its lag is zero (aa lag), or pass --force; nothing committed"
        )
    return _maybe_execute(topology, args, report.moves, known=False)
