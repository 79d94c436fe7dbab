"""OffsetSyncStore: the syncs of one flow (A→B, read from B), and the two lookups built on them.

Pure and synchronous; :meth:`OffsetSyncStore.load` fills it from the sync topic. Like MM2's
OffsetSyncStore it refuses to answer until it has read its topic to the end (``ready``): a store
that answered from half its history would translate to stale, too-early offsets.

Invariants (per source partition, syncs in the order written):
  A. a sync's records are contiguous: source ``s`` ↦ ``target_first + s - source_first``;
  B. source offsets in ``[covered_from, source_first)`` were not copied;
  C. target offsets grow with write order (one writer per partition, writes in produce order);
  D. a later sync wins where two cover the same source offset (an at-least-once restart copied
     it again, later in the target: resuming at the later copy still sees everything after it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aa.errors import AaError
from aa.offsets.sync import OffsetSync
from aa.tail import TopicReader

Exactness = Literal["exact", "ahead", "before-syncs", "gap"]


class NotReadyError(AaError):
    """The store has not read its sync topic to the end yet."""


@dataclass(frozen=True, slots=True)
class Position:
    """A translated offset. ``exact``: the first copied record at or after the offset;
    ``ahead``: the offset is beyond what the flow copied so far (the answer is the end of the
    copies: records copied later land after it, so nothing is lost; duplicates are bounded by
    the flow's lag); ``before-syncs``/``gap``: no sync covers it (``offset`` is ``None``)."""

    topic: str
    partition: int
    offset: int | None
    exactness: Exactness


class OffsetSyncStore:
    def __init__(self, source: str, target: str) -> None:
        self.source, self.target = source, target
        self._syncs: dict[tuple[str, int], list[OffsetSync]] = {}
        self._by_target: dict[tuple[str, int], list[OffsetSync]] = {}
        self.ready = False

    def add(self, sync: OffsetSync) -> None:
        self._syncs.setdefault((sync.topic, sync.partition), []).append(sync)
        self._by_target.setdefault((sync.target_topic, sync.partition), []).append(sync)

    def extend(self, syncs: Iterable[OffsetSync]) -> None:
        for s in syncs:
            self.add(s)

    def _check(self) -> None:
        if not self.ready:
            raise NotReadyError(
                f"offset syncs of {self.source}->{self.target} not read to the end yet"
            )

    def source_topics(self) -> set[str]:
        return {t for t, _ in self._syncs}

    def feeds(self, target_topic: str, partition: int) -> str | None:
        """The source topic whose copies land in ``target_topic`` (None: none do)."""
        syncs = self._by_target.get((target_topic, partition))
        return syncs[-1].topic if syncs else None

    def target_topic(self, topic: str, partition: int) -> str | None:
        syncs = self._syncs.get((topic, partition))
        return syncs[-1].target_topic if syncs else None

    def copied_end(self, topic: str, partition: int) -> int | None:
        """The source offset after the newest record this flow copied (None: no syncs)."""
        self._check()
        syncs = self._syncs.get((topic, partition))
        return max(s.source_last for s in syncs) + 1 if syncs else None

    def translate(self, topic: str, partition: int, offset: int) -> Position:
        """Where a consumer of the target must start to see every copied record of source
        ``topic/partition`` at or after ``offset`` — and none before it when exact."""
        self._check()
        syncs = self._syncs.get((topic, partition), [])
        if not syncs:
            return Position(topic, partition, None, "gap")
        target = syncs[-1].target_topic
        for s in reversed(syncs):  # newest first (invariant D)
            if s.covered_from <= offset <= s.source_last:
                if offset <= s.source_first:
                    return Position(target, partition, s.target_first, "exact")
                exact = s.target_first + offset - s.source_first
                return Position(target, partition, exact, "exact")
        newest = max(syncs, key=lambda s: s.source_last)
        if offset > newest.source_last:
            return Position(target, partition, newest.target_last + 1, "ahead")
        if offset < min(s.covered_from for s in syncs):
            return Position(target, partition, None, "before-syncs")
        return Position(target, partition, None, "gap")

    def upstream(self, target_topic: str, partition: int, offset: int) -> Position:
        """The reverse: a consumer of the target at ``offset`` has seen the copies of every
        source record before the returned source offset (conservative: never past one it has
        not seen)."""
        self._check()
        syncs = self._by_target.get((target_topic, partition), [])
        if not syncs:
            return Position(target_topic, partition, None, "gap")
        source = syncs[-1].topic
        before = [s for s in syncs if s.target_first < offset]
        if not before:
            return Position(source, partition, syncs[0].covered_from, "before-syncs")
        s = before[-1]  # invariant C: the newest copy below ``offset``
        if offset <= s.target_last:
            return Position(source, partition, s.source_first + offset - s.target_first, "exact")
        return Position(source, partition, s.source_last + 1, "exact")

    async def load(self, topic: str, client: Mapping[str, Any]) -> OffsetSyncStore:
        """Read ``topic`` to its end and mark the store ready."""
        async with TopicReader(topic, client) as reader:
            await self.catch_up(reader)
        return self

    async def catch_up(self, reader: TopicReader) -> None:
        for r in await reader.catch_up():
            if r.value is not None:
                self.add(OffsetSync.decode(r.value))
        self.ready = True
