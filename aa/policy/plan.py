"""What a topology will do: the flows and, per flow, the topics it copies and to which names.

Pure: :func:`build_plan` takes the topic listings (name -> partition count per DC) already
fetched, or ``None`` for an offline plan (flows and patterns only). ``aa plan`` prints
:func:`render` of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from aa.config.mm2 import suggest
from aa.config.model import Flow, Topology
from aa.policy.routes import RouteTable
from aa.policy.selection import COPY, TopicSelector

TopicListing = Mapping[str, Mapping[str, int]]
"""DC -> topic name -> partition count."""


@dataclass(frozen=True, slots=True)
class TopicCopy:
    source_topic: str
    target_topic: str
    partitions: int
    target_partitions: int | None
    """``None`` when the target topic does not exist yet (the flow creates it)."""
    grows: bool = False
    """Topic sync is on: a target with fewer partitions is grown to the source's count, in
    either loop-prevention mode (partition counts are the topology's)."""

    @property
    def fewer(self) -> bool:
        """The target topic exists with fewer partitions than the source's."""
        return self.target_partitions is not None and self.target_partitions < self.partitions

    @property
    def by_key_hash(self) -> bool:
        """The target keeps fewer partitions: records go by key hash, not by partition."""
        return self.fewer and not self.grows


@dataclass(frozen=True, slots=True)
class FlowPlan:
    flow: Flow
    subscription: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    origins: tuple[str, ...]
    copies: tuple[TopicCopy, ...] | None
    """``None`` in an offline plan."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(topic, reason) of source topics not copied (internal topics left out)."""
    idle: tuple[str, ...] = ()
    """Include patterns that copy no topic of the source now (a typo, or a topic not created
    yet: the flow picks it up once it exists)."""


@dataclass(frozen=True, slots=True)
class Plan:
    topology: Topology
    flows: tuple[FlowPlan, ...]
    warnings: tuple[str, ...]


def build_plan(
    topology: Topology, listing: TopicListing | None = None, *, dc: str | None = None
) -> Plan:
    """The plan of every flow, or of the flows into ``dc`` (what ``aa run --dc`` runs)."""
    routes = RouteTable(topology.dc_names, topology.flows)
    flows = topology.inbound(dc) if dc is not None else topology.flows
    warnings: list[str] = []
    for origin, missing in routes.unreachable().items():
        warnings.append(
            f"events written in {origin} never reach {', '.join(missing)}: no route in the "
            "flow graph"
        )
    plans = []
    for flow in flows:
        sel = TopicSelector(topology, flow, routes=routes)
        filt = topology.topics_for(flow)
        copies: list[TopicCopy] | None = None
        skipped: list[tuple[str, str]] = []
        if listing is not None:
            copies = []
            src_topics = listing.get(flow.source, {})
            tgt_topics = listing.get(flow.target, {})
            for d in sel.select(src_topics):
                if d.target is None:
                    if d.reason != "internal":
                        skipped.append((d.source_topic, d.reason))
                    continue
                assert d.reason == COPY
                copy = TopicCopy(
                    d.source_topic, d.target, src_topics[d.source_topic],
                    tgt_topics.get(d.target), topology.topic_sync.enabled,
                )  # fmt: skip
                copies.append(copy)
                if copy.by_key_hash:
                    warnings.append(
                        f"{flow.name}: {flow.target}/{copy.target_topic} has "
                        f"{copy.target_partitions} partitions, fewer than "
                        f"{flow.source}/{copy.source_topic} ({copy.partitions}): records go "
                        "by key hash, not by source partition"
                    )
                elif copy.fewer:
                    warnings.append(
                        f"{flow.name}: {flow.target}/{copy.target_topic} grows from "
                        f"{copy.target_partitions} to {copy.partitions} partitions like "
                        f"{flow.source}/{copy.source_topic} (partition counts are the "
                        "topology's, so records keep their partition; partitions only ever grow)"
                    )
        plans.append(
            FlowPlan(
                flow,
                sel.subscription(),
                filt.include,
                filt.exclude,
                routes.origins_carried(flow.source, flow.target),
                None if copies is None else tuple(copies),
                tuple(skipped),
                () if copies is None else _idle(sel, filt.include, copies),
            )
        )
    return Plan(topology, tuple(plans), tuple(warnings))


def _idle(sel: TopicSelector, include: tuple[str, ...], copies: list[TopicCopy]) -> tuple[str, ...]:
    """The patterns of ``include`` that no copied topic matches (by its name, or in prefix mode
    by its name without the DC prefix, as the selector matches it)."""
    names = []
    for c in copies:
        names.append(c.source_topic)
        if sel.prefix and (up := sel.policy.upstream_topic(c.source_topic)) is not None:
            names.append(up)
    return tuple(p for p in include if not any(re.fullmatch(p, n) for n in names))


def render(plan: Plan, *, show_file: bool = True) -> str:
    t = plan.topology
    lp = t.loop_prevention
    mode = lp.mode if lp.mode == "headers" else f"prefix ({lp.style}, separator {lp.separator!r})"
    graph: str = t.graph.kind
    if graph == "hub-and-spoke":
        graph += f" (hub {t.graph.hub}, {t.graph.direction})"
    lines = []
    if show_file and t.source_file:
        lines.append(f"config: {t.source_file}")
    lines += [
        f"topology: {graph}; loop prevention: {mode}; delivery: {t.delivery}",
        "datacenters:",
    ]
    width = max(len(n) for n in t.dc_names)
    for dc in t.datacenters:
        lines.append(f"  {dc.name:<{width}}  {dc.bootstrap}  {dc.security_protocol}")
    lines.append(f"flows ({len(plan.flows)}):")
    for fp in plan.flows:
        lines.append(f"  {fp.flow.name}")
        lines.append(f"    carries events written in: {', '.join(fp.origins)}")
        lines.append(
            f"    topics: include {', '.join(fp.include)}"
            + (f"; exclude {', '.join(fp.exclude)}" if fp.exclude else "")
        )
        if fp.copies is None:
            lines.append(f"    subscription: {fp.subscription}")
            continue
        if fp.idle:
            lines.append(
                f"    ! no topic in {fp.flow.source} matches {', '.join(fp.idle)} (yet: copied "
                "once created)"
            )
        for c in fp.copies:
            state = "new" if c.target_partitions is None else f"{c.target_partitions}p"
            note = "  ! by key hash" if c.by_key_hash else ""
            note = f"  grows to {c.partitions}p" if c.fewer and c.grows else note
            lines.append(
                f"    {c.source_topic} ({c.partitions}p) -> {c.target_topic} ({state}){note}"
            )
        named = [f"{name} ({why})" for name, why in fp.skipped if why != "not-included"]
        unmatched = sum(1 for _, why in fp.skipped if why == "not-included")
        if named:
            lines.append("    not copied: " + ", ".join(named))
        if unmatched:
            lines.append(f"    {unmatched} other topic(s) do not match the include patterns")
    if t.ignored:
        shown = []
        for key in t.ignored:
            near = suggest(key, t.dc_names)
            shown.append(f"{key} (did you mean {near}?)" if near else key)
        lines.append("ignored MM2 settings: " + ", ".join(shown))
    for w in plan.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
