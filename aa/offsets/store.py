"""OffsetSyncStore: the syncs of one flow (A→B, read from B), and the two lookups built on them.

Pure and synchronous; :meth:`OffsetSyncStore.load` fills it from the sync topic. Like MM2's
OffsetSyncStore it refuses to answer until it has read its topic to the end (``ready``): a store
that answered from half its history would translate to stale, too-early offsets.

Invariants (per source partition, syncs in the order written):
  A. a sync's records are contiguous: source ``s`` ↦ ``target_first + s - source_first``;
  B. source offsets in ``[covered_from, source_first)`` were not copied by that sync's run (a
     run starts at the offset its process fetched first: it never claims a range another
     process copied while this one did not own the partition);
  C. target offsets grow with write order (one writer per partition at a time);
  D. where two syncs cover the same source offset, the later one holds it (an at-least-once
     restart copied it again, later in the target); the older one keeps what was not re-copied.

Translation is never ahead of the copy: an answer may be *behind* (the consumer reads some
copies again) but a consumer starting at it sees a copy of every record at or after the offset
that the target holds. Memory is bounded per partition (:mod:`aa.offsets.index`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aa.errors import AaError
from aa.offsets.index import OLDER, RECENT, SourceIndex, TargetIndex
from aa.offsets.sync import OffsetSync, Repartitioned, SyncDecodeError, decode_sync
from aa.tail import TopicReader, Unreadable

Exactness = Literal["exact", "behind", "ahead", "before-syncs", "gap", "repartitioned"]


class NotReadyError(AaError):
    """The store has not read its sync topic to the end yet."""


@dataclass(frozen=True, slots=True)
class Position:
    """A translated offset. ``exact``: the first copied record at or after the offset;
    ``behind``: a safe position before it (the syncs in between were thinned, or written by a
    process whose syncs are gone): some copies are read again, none is missed; ``ahead``: the
    offset is beyond what the flow copied so far (the answer is the end of the copies: records
    copied later land after it, so nothing is lost; duplicates are bounded by the flow's lag);
    ``before-syncs``/``gap``/``repartitioned``: no safe answer (``offset`` is ``None``)."""

    topic: str
    partition: int
    offset: int | None
    exactness: Exactness


@dataclass(slots=True)
class _Partition:
    target_topic: str
    index: SourceIndex
    hashed_from: int | None = None
    """Set while a :class:`Repartitioned` marker is open (the flow copies by key hash)."""
    hashed_until: int = -1
    """Every offset up to this one may have been copied by key hash: refused."""


class OffsetSyncStore:
    def __init__(
        self, source: str, target: str, *, recent: int = RECENT, older: int = OLDER
    ) -> None:
        self.source, self.target = source, target
        self._recent, self._older = recent, older
        self._parts: dict[tuple[str, int], _Partition] = {}
        self._by_target: dict[tuple[str, int], TargetIndex] = {}
        self.ready = False
        self.records_read = 0
        self.skipped = Unreadable(
            "offset_syncs_unreadable",
            "records that are not offset syncs are skipped; translation uses the others (a "
            "missing sync can only make an answer behind, never ahead)",
        )

    def add(self, sync: OffsetSync | Repartitioned) -> None:
        """Add the next record of the sync topic (in the order written)."""
        key = (sync.topic, sync.partition)
        part = self._parts.get(key)
        if part is None:
            part = self._parts[key] = _Partition(
                sync.target_topic, SourceIndex(self._recent, self._older)
            )
        part.target_topic = sync.target_topic
        if isinstance(sync, Repartitioned):
            part.hashed_from = sync.first
            return
        if part.hashed_from is not None:  # a same-partition run again: the marker closes
            part.hashed_until = max(part.hashed_until, sync.covered_from - 1)
            part.hashed_from = None
        part.index.add(sync)
        tkey = (sync.target_topic, sync.partition)
        index = self._by_target.get(tkey)
        if index is None:
            index = self._by_target[tkey] = TargetIndex(self._recent, self._older)
        index.add(sync)

    def extend(self, syncs: Iterable[OffsetSync | Repartitioned]) -> None:
        for s in syncs:
            self.add(s)

    def _check(self) -> None:
        if not self.ready:
            raise NotReadyError(
                f"offset syncs of {self.source}->{self.target} not read to the end yet"
            )

    def source_topics(self) -> set[str]:
        return {t for t, _ in self._parts}

    def feeds(self, target_topic: str, partition: int) -> str | None:
        """The source topic whose copies land in ``target_topic`` (None: none do)."""
        index = self._by_target.get((target_topic, partition))
        newest = index.newest if index is not None else None
        return newest.topic if newest is not None else None

    def target_topic(self, topic: str, partition: int) -> str | None:
        part = self._parts.get((topic, partition))
        return part.target_topic if part is not None else None

    def synced(self) -> int:
        """Syncs held in memory (bounded per partition)."""
        return sum(len(p.index) for p in self._parts.values()) + sum(
            len(i) for i in self._by_target.values()
        )

    def copied_end(self, topic: str, partition: int) -> int | None:
        """The source offset after the newest record this flow copied (None: no syncs)."""
        self._check()
        part = self._parts.get((topic, partition))
        return part.index.copied_end() if part is not None else None

    @property
    def unreadable(self) -> int:
        """Records of the sync topic that are not syncs (skipped)."""
        return self.skipped.count

    def copied_ends(self) -> dict[tuple[str, int], int]:
        """:meth:`copied_end` of every source partition with syncs."""
        self._check()
        ends = {key: part.index.copied_end() for key, part in self._parts.items()}
        return {key: end for key, end in ends.items() if end is not None}

    def copied_end_ids(self) -> dict[tuple[str, int], str | None]:
        """Per source partition with syncs, the topic id the sync that gives its
        :meth:`copied_end` was written with (``None``: without one): the incarnation of the
        topic that end belongs to."""
        self._check()
        parts = self._parts.items()
        return {key: p.index.entries[-1].topic_id for key, p in parts if p.index.entries}

    def translate(self, topic: str, partition: int, offset: int) -> Position:
        """Where a consumer of the target must start to see every copied record of source
        ``topic/partition`` at or after ``offset`` — and none before it when exact."""
        self._check()
        part = self._parts.get((topic, partition))
        if part is None:
            return Position(topic, partition, None, "gap")
        target = part.target_topic
        if part.hashed_from is not None or offset <= part.hashed_until:
            return Position(target, partition, None, "repartitioned")
        found = part.index.lookup(offset)
        if found is None:
            if not part.index.entries:
                return Position(target, partition, None, "gap")
            return Position(target, partition, None, "before-syncs")
        at, kind = found
        return Position(target, partition, at, kind)

    def upstream(self, target_topic: str, partition: int, offset: int) -> Position:
        """The reverse: a consumer of the target at ``offset`` has seen the copies of every
        source record before the returned source offset (conservative: never past one it has
        not seen)."""
        self._check()
        index = self._by_target.get((target_topic, partition))
        newest = index.newest if index is not None else None
        if index is None or newest is None:
            return Position(target_topic, partition, None, "gap")
        source = newest.topic
        found = index.lookup(offset)
        if found is None:
            return Position(source, partition, index.oldest_covered(), "before-syncs")
        return Position(source, partition, found[0], "exact")

    async def load(self, topic: str, client: Mapping[str, Any]) -> OffsetSyncStore:
        """Read ``topic`` to its end and mark the store ready."""
        async with TopicReader(topic, client) as reader:
            await self.catch_up(reader)
        return self

    async def catch_up(self, reader: TopicReader, timeout: float = 30.0) -> None:
        """Read what was written since the last call, batch by batch (memory stays bounded
        while a long head of the topic is read)."""

        def handle(records: list[Any]) -> None:
            for r in records:
                if r.value is not None:
                    try:
                        sync = decode_sync(r.value)
                    except SyncDecodeError as exc:
                        self.skipped.skip(r, exc)
                        continue
                    self.add(sync)
            self.records_read += len(records)

        await reader.catch_up_each(handle, timeout)
        self.ready = True
        self.skipped.warn(reader.topic)
