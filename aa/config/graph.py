"""Resolving the ``flows:`` description into the list of ordered DC pairs."""

from __future__ import annotations

from collections.abc import Sequence

from aa.config.model import Direction, Flow


def full_mesh(dcs: Sequence[str]) -> tuple[Flow, ...]:
    """Every ordered pair: N*(N-1) flows."""
    return tuple(Flow(a, b) for a in dcs for b in dcs if a != b)


def hub_and_spoke(dcs: Sequence[str], hub: str, direction: Direction) -> tuple[Flow, ...]:
    """Spokes → hub (``inbound``), hub → spokes (``outbound``) or both."""
    out: list[Flow] = []
    for dc in dcs:
        if dc == hub:
            continue
        if direction in ("inbound", "both"):
            out.append(Flow(dc, hub))
        if direction in ("outbound", "both"):
            out.append(Flow(hub, dc))
    return sort_flows(out)


def sort_flows(flows: Sequence[Flow]) -> tuple[Flow, ...]:
    return tuple(sorted(flows, key=lambda f: (f.source, f.target)))


def is_full_mesh(dcs: Sequence[str], flows: Sequence[Flow]) -> bool:
    return {(f.source, f.target) for f in flows} == {
        (f.source, f.target) for f in full_mesh(dcs)
    } and all(f.topics is None for f in flows)
