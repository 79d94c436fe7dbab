"""OffsetSyncWriter: turns settled produce batches into offset syncs and sends them to the sync
topic on the target, bounded by a semaphore (MM2's OffsetSyncWriter).

Only what translation needs is written. A batch that continues the open run of its partition
(next source offset, next target offset) only extends it in memory; the run is written when it
breaks (a skipped record, another writer's records in between: each run is an exact answer),
when it has been unwritten for ``flush_interval_s`` since the partition's last write (copying,
or at a commit while copying: :meth:`OffsetSyncWriter.flush` with ``due_only``; the flow's
commit loop also wakes for it when idle, so a run's tail is written within the interval), and
in full when the flow drains, stops, commits a transaction or loses the partition. So a
partition costs one sync per run break plus at most one per interval, whatever the batch size
or the commit rate (a trickle committed per record wrote one sync per record); the newest part
of a run that is not written yet translates as ``ahead`` (the end of the written copies:
behind, never ahead).

Kept: each sync goes to a ring of ``RING`` keys per partition (``topic/partition/r<i>``). Anchors
keep older offsets translatable: at level ``k`` the source offsets fall in buckets of
``2**(ANCHOR_SHIFT + k)``; the first sync of each bucket is also written under
``topic/partition/x<k>.<bucket parity>``, once, at the highest level whose boundary it crossed
(the lower levels' buckets start with the same sync, and the highest key keeps it longest: a
run from offset 0 crosses all 40 levels and wrote 40 identical anchors), so each level's
current and previous buckets' first syncs are held at that level or above. The topic is
compacted, so after cleaning it holds at most ``RING + 2 * ANCHOR_LEVELS`` syncs per partition
(plus one marker): exact translation for the last ``RING`` runs; an offset of age ``A`` (in
source offsets) finds an anchor at most about ``2 * A`` before it (coarse, behind, never ahead).

Unlike MM2 it never drops a sync when the bound is reached: it waits (backpressure on the
flow's commit loop). In exactly-once mode the flow's producer is transactional and the syncs
ride in the same transaction as the records they describe.

A run starts where this process first fetched the partition. When the partition is revoked the
run ends; when it comes back (at any offset) a new run starts there, so a sync never claims a
range another process copied meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin
from aa.logs import get_logger
from aa.offsets.sync import OffsetSync, Repartitioned, span_runs

_log = get_logger("aa.offsets")

RING = 128
"""Recent syncs kept per partition in the compacted topic (exact translation)."""
ANCHOR_SHIFT = 10
ANCHOR_LEVELS = 40
"""Anchor buckets of ``2**(ANCHOR_SHIFT + k)`` source offsets, 1 Ki ... 2**49."""
FLUSH_INTERVAL_S = 1.0

COMPACTED_INTERNAL_CONFIGS = {
    "cleanup.policy": "compact",
    # Compaction only cleans closed segments: roll them small and often, so that the topic
    # holds the bounded compacted set plus at most a few segments of recent writes.
    "segment.bytes": str(1024 * 1024),
    "segment.ms": str(10 * 60 * 1000),
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0.5",
}
SYNC_TOPIC_CONFIGS = dict(COMPACTED_INTERNAL_CONFIGS)


async def ensure_internal_topic(
    admin: ClusterAdmin, topic: str, configs: dict[str, str] | None = None
) -> int | None:
    """Create a one-partition compacted internal topic if missing; an existing one gets the
    configs that keep it bounded (other configs set on it are kept). Returns its partition
    count (None when the cluster did not list it)."""
    want = configs or SYNC_TOPIC_CONFIGS
    if await admin.create_topics([(topic, 1, want)]):
        return 1
    have = (await admin.topic_configs([topic])).get(topic)
    if have is not None and any(have.get(k) != v for k, v in want.items()):
        await admin.set_topic_configs(topic, {**have, **want})
    info = (await admin.topics()).get(topic)
    return info.partitions if info is not None else None


@dataclass(slots=True)
class _Open:
    """The run being copied in one partition, not final yet."""

    sync: OffsetSync
    slot: int
    written: bool
    since: float


class OffsetSyncWriter:
    def __init__(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        max_in_flight: int = 64,
        *,
        partitions: int | None = None,
        flush_interval_s: float = FLUSH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._producer = producer
        self.topic = topic
        # A one-partition topic (as aa creates it) is written to partition 0 directly: the
        # producer's key hash (pure Python murmur2) was ~1.5% of a W3 process's CPU.
        self._partition = 0 if partitions == 1 else None
        self._slots = asyncio.Semaphore(max_in_flight)
        self._interval = flush_interval_s
        self.clock = clock
        """The writer's clock (``time.monotonic``), which :meth:`next_due` answers in."""
        self._from: dict[TopicPartition, int] = {}
        self._open: dict[TopicPartition, _Open] = {}
        self._ring: dict[TopicPartition, int] = {}
        self._anchored: dict[TopicPartition, int] = {}
        self._hashed: dict[TopicPartition, int] = {}
        self.written = 0
        self.failed = 0
        self.last_error: BaseException | None = None
        """The broker's error behind the last failed sync (logged too; the flow names it)."""
        self.on_failure: Callable[[], None] | None = None
        """Called when a sync fails (the flow's commit loop, so an idle flow stops too)."""
        self.topic_ids: Mapping[str, str] = {}
        """Source topic -> Kafka's id of the incarnation copied, as far as the flow's delivery
        learned them; each sync is written with its topic's id once known."""

    def saw(self, tp: TopicPartition, first_offset: int) -> None:
        """The flow fetched ``tp`` starting at ``first_offset`` (the run covers from it)."""
        self._from.setdefault(tp, first_offset)

    async def revoked(self, tps: Iterable[TopicPartition]) -> None:
        """The flow lost ``tps`` (after settling everything it fetched from them): write their
        open runs and end them; a later assignment starts new runs where it fetches."""
        for tp in tps:
            await self._write_open(tp)
            self._open.pop(tp, None)
            self._from.pop(tp, None)
            self._hashed.pop(tp, None)

    async def repartitioned(
        self, tp: TopicPartition, target_topic: str, records: Sequence[Any]
    ) -> None:
        """``records`` of ``tp`` go to the target by key hash (it has fewer partitions): no
        sync describes them; the first such batch of a run writes a marker that makes
        translation refuse the partition up to the next same-partition run."""
        if not records:
            return
        if tp not in self._hashed:
            await self._write_open(tp)
            self._open.pop(tp, None)
            marker = Repartitioned(tp.topic, tp.partition, target_topic, records[0].offset)
            await self._send(marker.encode(), marker.key())
        self._hashed[tp] = max(self._hashed.get(tp, -1), records[-1].offset)
        self._from.pop(tp, None)

    async def copied(
        self, tp: TopicPartition, target_topic: str, records: Sequence[Any], base: int
    ) -> None:
        """``records`` (in order) landed at ``target_topic``/``tp.partition`` from ``base``
        (records with an ``offset``, or :class:`~aa.offsets.sync.Spans` of them)."""
        if not records:
            return
        first, last = records[0].offset, records[-1].offset
        hashed = self._hashed.get(tp)
        if hashed is not None:
            if last <= hashed:
                return  # copied by key hash, or fetched before: the marker covers them
            del self._hashed[tp]
        covered = min(self._from.get(tp, first), first)  # re-copies restart it
        if hashed is not None:
            covered = max(covered, hashed + 1)
        if last - first == len(records) - 1:  # offsets only grow: no gap, one run
            pieces = [OffsetSync(tp.topic, tp.partition, target_topic, covered, first, last, base)]
        else:
            # not isinstance(records, Spans): a runtime Protocol check walks the protocol's
            # members on every call (~1% of a W3 process's CPU)
            spans_of = getattr(records, "spans", None)
            spans = spans_of() if spans_of is not None else _each(records)
            pieces = span_runs(tp.topic, tp.partition, target_topic, spans, base, covered)
        for piece in pieces:
            await self._extend(tp, piece)
        self._from[tp] = last + 1
        run = self._open.get(tp)
        if run is not None and not run.written and self.clock() - run.since >= self._interval:
            await self._write(tp, run)

    async def flush(self, *, due_only: bool = False) -> None:
        """Write every open run that has unwritten copies (before a final commit: a drain, a
        stop, a transaction); ``due_only``: only those last written (or begun)
        ``flush_interval_s`` ago or more (a commit while copying: at most one sync per
        partition per interval, not one per commit)."""
        now = self.clock()
        for tp, run in list(self._open.items()):
            if not run.written and (not due_only or now - run.since >= self._interval):
                await self._write(tp, run)

    def next_due(self) -> float | None:
        """When (on the writer's clock) the next open run with unwritten copies is due, so
        the tail of a run is written within the interval while the flow idles; ``None``:
        nothing unwritten."""
        due = [run.since + self._interval for run in self._open.values() if not run.written]
        return min(due) if due else None

    async def _extend(self, tp: TopicPartition, piece: OffsetSync) -> None:
        run = self._open.get(tp)
        if run is not None:
            s = run.sync
            if (
                piece.covered_from == piece.source_first == s.source_last + 1
                and piece.target_first == s.target_last + 1
                and piece.target_topic == s.target_topic
            ):
                run.sync = replace(s, source_last=piece.source_last)
                run.written = False
                return
            if not run.written:
                await self._write(tp, run)
        slot = self._ring.get(tp, -1) + 1
        self._ring[tp] = slot
        self._open[tp] = _Open(piece, slot % RING, False, self.clock())

    async def _write_open(self, tp: TopicPartition) -> None:
        run = self._open.get(tp)
        if run is not None and not run.written:
            await self._write(tp, run)

    async def _write(self, tp: TopicPartition, run: _Open) -> None:
        s = run.sync
        topic_id = self.topic_ids.get(s.topic)
        if topic_id is not None and s.topic_id is None:
            s = run.sync = replace(s, topic_id=topic_id)
        value = s.encode()
        # marked first: a batch that extends the run while this one is sent marks it again
        run.written, run.since = True, self.clock()
        await self._send(value, s.key(f"r{run.slot}"))
        # The offset before the run when a writer starts: a run from offset 0 crosses every
        # level (-1 >> k is -1); a restart elsewhere does not overwrite older anchors.
        last = self._anchored.get(tp, s.covered_from - 1)
        top = -1
        for k in range(ANCHOR_LEVELS):
            if last >> (ANCHOR_SHIFT + k) == s.source_last >> (ANCHOR_SHIFT + k):
                break  # no boundary crossed at this level, nor above
            top = k
        if top >= 0:  # once, at the highest level crossed: the lower ones would hold it too
            key = f"x{top}.{(s.source_last >> (ANCHOR_SHIFT + top)) & 1}"
            await self._send(value, s.key(key))
        self._anchored[tp] = s.source_last

    async def _send(self, value: bytes, key: bytes) -> None:
        await self._slots.acquire()
        try:
            fut = await self._producer.send(self.topic, value, key, partition=self._partition)
        except BaseException:
            self._slots.release()
            raise
        fut.add_done_callback(self._done)
        self.written += 1

    def _done(self, fut: asyncio.Future[Any]) -> None:
        self._slots.release()
        if not fut.cancelled() and fut.exception() is not None:
            self.failed += 1  # the flow checks this when it settles (a lost sync is an error)
            self.last_error = fut.exception()
            if self.failed == 1:  # once: a refused request fails each of its syncs
                _log.error(
                    "offset_sync_write_failed", topic=self.topic, error=repr(self.last_error)
                )
            if self.on_failure is not None:
                self.on_failure()


def _each(records: Iterable[Any]) -> Iterator[tuple[int, int]]:
    return ((r.offset, 1) for r in records)
