"""Translate a consumer group's position from one DC to another.

A topic partition in DC ``A`` may hold records of several origins: written in A, copied into A
from other DCs. Each origin's records keep their order on every path, so for each origin there
is an exact position in ``B`` after which every record of that origin the group has not seen
lies. The translated offset is the smallest of them: nothing is lost, and duplicates are only
the other origins' records between it and their own exact positions (none when the partition
holds one origin, as in active-standby or prefix mode).

* origin A: the A→B syncs map the group's offset forward;
* origin B: the B→A syncs map it backwards to B's own offset;
* origin X (a third DC): backwards through X→A, then forward through X→B.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aa.offsets.store import OffsetSyncStore, Position

Stores = Mapping[tuple[str, str], OffsetSyncStore]
"""(source DC, target DC) -> the syncs of that flow."""


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """Where a group at ``offset`` of ``topic/partition`` in ``source`` resumes in ``target``.

    ``target_offset`` is ``None`` when some origin's position is unknown (no sync covers it):
    the plan then refuses that partition rather than guess.
    """

    source: str
    target: str
    topic: str
    partition: int
    offset: int
    target_topic: str | None
    target_offset: int | None
    exactness: str
    origins: tuple[tuple[str, int | None, str], ...]
    """Per origin DC: its exact position in the target and how it was found."""


def translate_offset(
    topic: str, partition: int, offset: int, source: str, target: str, stores: Stores
) -> PartitionPlan:
    parts: list[tuple[str, Position]] = []
    own = stores.get((source, target))
    if own is not None and own.target_topic(topic, partition) is not None:
        parts.append((source, own.translate(topic, partition, offset)))
    for (x, into), back in stores.items():
        if into != source or x == source:
            continue
        upstream_topic = back.feeds(topic, partition)
        if upstream_topic is None:
            continue
        up = back.upstream(topic, partition, offset)
        if x == target or up.offset is None:
            parts.append((x, up))
            continue
        fwd = stores.get((x, target))
        if fwd is None or fwd.target_topic(up.topic, partition) is None:
            parts.append((x, Position(up.topic, partition, None, "gap")))
        else:
            parts.append((x, fwd.translate(up.topic, partition, up.offset)))
    origins = tuple((dc, p.offset, p.exactness) for dc, p in parts)
    if not parts:
        return PartitionPlan(
            source, target, topic, partition, offset, None, None, "not-mirrored", origins
        )
    known = [p for _, p in parts if p.offset is not None]
    if len(known) < len(parts):
        bad = next(p for _, p in parts if p.offset is None)
        return PartitionPlan(
            source, target, topic, partition, offset, bad.topic, None, bad.exactness, origins
        )
    best = min(known, key=lambda p: p.offset or 0)
    if len(parts) == 1:
        kind: str = best.exactness
    else:
        kind = "ahead" if any(p.exactness == "ahead" for p in known) else "min-of-origins"
    return PartitionPlan(
        source, target, topic, partition, offset, best.topic, best.offset, kind, origins
    )
