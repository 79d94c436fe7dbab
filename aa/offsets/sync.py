"""The offset-sync value: where a contiguous run of copied records landed in the target.

A flow writes one :class:`OffsetSync` per contiguous run of copied records (split wherever the
source offsets jump: skipped records, compaction gaps), so every copied record's target offset
is known exactly: record ``s`` in ``[source_first, source_last]`` landed at
``target_first + (s - source_first)``; the source offsets in ``[covered_from, source_first)``
were not copied by this flow. Offsets are per partition; the target partition equals the source
partition. Where the target has fewer partitions, records go by key hash instead, and the flow
writes a :class:`Repartitioned` marker rather than syncs: translation refuses that partition.

Keys: a sync is written under ``topic/partition/r<slot>`` (a ring of recent runs per partition)
and, now and then, under ``topic/partition/x<level>`` (exponentially spaced anchors); a marker
under ``topic/partition/h``. The topic is compacted, so it holds a bounded number of records per
partition (see :mod:`aa.offsets.writer`). Readers use the value only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import orjson

from aa import wire
from aa.errors import AaError


@runtime_checkable
class Spans(Protocol):
    """Copied records held as spans of contiguous source offsets (the batch path's raw
    batches), so offset syncs need no record each."""

    def spans(self) -> Iterable[tuple[int, int]]:
        """``(first offset, count)`` of each span, in order."""
        ...


def sync_key(topic: str, partition: int, slot: str = "") -> bytes:
    """The key of a record of the sync topic: ``topic/partition`` and the slot, if any (see the
    module doc)."""
    base = f"{topic}/{partition}"
    return f"{base}/{slot}".encode() if slot else base.encode()


class SyncDecodeError(AaError):
    """An offset-sync record cannot be read (written by something else?)."""


@dataclass(frozen=True, slots=True)
class OffsetSync:
    topic: str
    partition: int
    target_topic: str
    covered_from: int
    source_first: int
    source_last: int
    target_first: int
    topic_id: str | None = None
    """Kafka's id of the source topic's incarnation the run was copied from (``None``: written
    before the flow knew it, or by an older aa); a flow that lost its positions resumes from a
    sync only for the same incarnation (:mod:`aa.offsets.resume`)."""

    @property
    def target_last(self) -> int:
        return self.target_first + (self.source_last - self.source_first)

    def key(self, slot: str = "") -> bytes:
        return sync_key(self.topic, self.partition, slot)

    def encode(self) -> bytes:
        return _SYNC.dump(self)

    @staticmethod
    def decode(value: bytes) -> OffsetSync:
        sync = decode_sync(value)
        if not isinstance(sync, OffsetSync):
            raise SyncDecodeError(f"not an offset sync but a marker: {value[:80]!r}")
        return sync


@dataclass(frozen=True, slots=True)
class Repartitioned:
    """From source offset ``first`` on, this flow copies ``topic/partition`` by key hash (the
    target has fewer partitions), until a later sync of the partition starts a same-partition
    run again: translation refuses every offset up to that run's start."""

    topic: str
    partition: int
    target_topic: str
    first: int

    def key(self) -> bytes:
        return sync_key(self.topic, self.partition, "h")

    def encode(self) -> bytes:
        return _MARKER.dump(self)


_SYNC = wire.Form(
    OffsetSync, covered_from="from", source_first="first", source_last="last", target_first="target"
)
_MARKER = wire.Form(Repartitioned, head={"kind": "repartitioned"})


def decode_sync(value: bytes) -> OffsetSync | Repartitioned:
    """A record of the sync topic: a sync or a repartitioned marker."""
    try:
        d = orjson.loads(value)
        if isinstance(d, dict) and d.get("kind") == _MARKER.head["kind"]:
            return _MARKER.load(d)
        return _SYNC.load(d)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SyncDecodeError(f"not an offset sync: {value[:80]!r} ({exc})") from exc


def runs(
    topic: str,
    partition: int,
    target_topic: str,
    source_offsets: Sequence[int],
    target_base: int,
    covered_from: int,
) -> list[OffsetSync]:
    """Split one produced batch (records at ``target_base + i`` in order) into contiguous runs.

    ``covered_from`` is the first source offset not accounted for by an earlier sync.
    """
    spans = ((o, 1) for o in source_offsets)
    return span_runs(topic, partition, target_topic, spans, target_base, covered_from)


def span_runs(
    topic: str,
    partition: int,
    target_topic: str,
    spans: Iterable[tuple[int, int]],
    target_base: int,
    covered_from: int,
) -> list[OffsetSync]:
    """:func:`runs` of a batch given as spans ``(first source offset, count)`` of contiguous
    records in order (whole source batches need no offset each)."""
    out: list[OffsetSync] = []
    first = last = -1
    start = target = target_base
    for offset, count in spans:
        if offset != last + 1 and first >= 0:
            out.append(OffsetSync(topic, partition, target_topic, covered_from, first, last, start))
            covered_from, first, start = last + 1, -1, target
        if first < 0:
            first = offset
        last = offset + count - 1
        target += count
    if first >= 0:
        out.append(OffsetSync(topic, partition, target_topic, covered_from, first, last, start))
    return out
