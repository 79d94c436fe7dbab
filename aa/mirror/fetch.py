"""The fetch stage: batches from the source consumer, and what a rebalance does to them.

:meth:`Fetcher.next_batch` is the seam the route stage consumes. A batch fetched before a
revoke is never routed (its partitions may belong to another process by now): the revoke bumps
the generation while holding :attr:`Fetcher.routing`, which the flow holds while it routes and
queues a batch. The revoke's drain runs inside aiokafka's rebalance listener, which catches and
only logs what a listener raises; so a failed drain is recorded here and re-raised by the next
:meth:`Fetcher.next_batch`: the flow stops with its error instead of going on as if the drain
had worked (and its commit, which did not happen, is never made later for it).

A batch that fails its CRC check (a damaged source log) ends its partition's list as a
:class:`~aa.kafka.records.CorruptBatch`. :meth:`Fetcher.next_batch` takes it out and moves the
partition's position back to it, so the records before it are copied and committed and the
batch is fetched once more (a fault in transit would not repeat); damaged at the same offset
again, :attr:`Fetcher.damage` is the error that stops the flow for good, before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from aiokafka import ConsumerRebalanceListener, TopicPartition

from aa.kafka.records import Polled, RawBatch, take_corrupt
from aa.kafka.switch import BatchSkipper
from aa.mirror.context import StageContext
from aa.mirror.delivery import Delivery
from aa.mirror.errors import FlowError
from aa.mirror.memory import PartitionShare
from aa.mirror.pending import Batch
from aa.offsets.writer import OffsetSyncWriter


class Fetcher:
    """Fetches from the source; remembers how far each partition was queued."""

    def __init__(
        self,
        ctx: StageContext,
        skipper: BatchSkipper | None = None,
        share: PartitionShare | None = None,
    ) -> None:
        self.ctx = ctx
        self.skipper = skipper
        """The consumer's batch skipper (:mod:`aa.kafka.fetched`), whose counts go to metrics."""
        self.share = share
        """Keeps the per-partition fetch size within the memory budget (:mod:`aa.mirror.memory`)."""
        self.routing = asyncio.Lock()
        """Held while a fetched batch is routed and queued; a revoke waits for it."""
        self.generation = 0
        """Revokes so far: a batch fetched before one is dropped, never produced after it."""
        self.revoke_error: BaseException | None = None
        """What failed the drain of a revoke (raised by the next :meth:`next_batch`)."""
        self._queued: dict[TopicPartition, int] = {}
        """Per source partition, the offset the last queued pending advances it to."""
        self._damaged: dict[TopicPartition, int] = {}
        """Per source partition, the offset of the last batch that failed its CRC check."""
        self.damage: FlowError | None = None
        """Set when a batch failed its CRC check twice: the flow stops before it, for good."""
        self._lag: dict[TopicPartition, Any] = {}
        self._mirror_skipped: dict[str, Any] = {}
        """The labelled metric children this flow updates per fetch: ``labels()`` builds and
        checks the label tuple on every call (~1% of a W3 process's CPU)."""

    async def next_batch(self) -> tuple[int, Batch]:
        """One ``getmany``, with the generation it was fetched in (see :meth:`current`)."""
        self.raise_revoke_error()
        generation = self.generation
        if self.share is not None:
            self.share.follow()
        polled: dict[TopicPartition, list[Polled]] = await self.ctx.clients.consumer.getmany(
            timeout_ms=200, max_records=self.ctx.settings.max_poll_records
        )
        if self.share is not None:  # before the next fetch leaves: no await in between
            self.share.observe(polled)
        batch, corrupt = take_corrupt(polled)
        for tp, at in corrupt.items():
            self._corrupt(tp, at)
        if self.skipper is not None:
            for tp, n in self.skipper.take().items():  # mirror-written batches, unread
                _detach(batch.get(tp, ()))
                counter = self._mirror_skipped.get(tp.topic)
                if counter is None:
                    counter = self._mirror_skipped[tp.topic] = self.ctx.metrics.skipped.labels(
                        **self.ctx.labels, topic=tp.topic, reason="mirror-batch"
                    )
                counter.inc(n)
        if batch and self.share is not None:  # seeks done: the next fetch may leave now
            await self.share.next_fetch_sent()
        self.raise_revoke_error()
        return generation, batch

    def _corrupt(self, tp: TopicPartition, at: int) -> None:
        """Move ``tp``'s position back to the :class:`CorruptBatch` taken out of its list (at
        ``at``): fetched once more, or (damaged there twice) :attr:`damage`."""
        self.ctx.clients.consumer.seek(tp, at)
        s = self.ctx.settings
        where = f"{tp.topic}/{tp.partition}@{at}"
        if self._damaged.get(tp) != at:
            self._damaged[tp] = at
            self.ctx.clients.log.warning("source_batch_corrupt", batch=where, reading_again=True)
            return
        self.ctx.metrics.errors.labels(**self.ctx.labels, kind="corrupt-source").inc()
        self.damage = self.damage or FlowError(
            f"{s.name}: the record batch at {where} in {s.source} fails its CRC check, read "
            "twice: the source log is damaged there (a disk or broker fault). The flow stops "
            "before it, for good; everything before it is copied and committed. Repair the "
            f"partition in {s.source} (move its leadership to a replica with an intact copy, "
            "or let the damaged replica copy it again), then restart the flow; aa skips "
            "nothing on its own",
            kind="corrupt-source",
            retriable=False,
        )

    def raise_revoke_error(self) -> None:
        if self.revoke_error is not None:
            raise self.revoke_error

    def current(self, generation: int, batch: Batch) -> bool:
        """Whether a batch fetched in ``generation`` may be routed (call holding ``routing``).

        Fetched before a revoke: not routed. Partitions still ours are fetched again from
        here; the others, by their new owner from the commit."""
        if generation == self.generation:
            return True
        assigned = self.ctx.clients.consumer.assignment()
        for tp, records in batch.items():
            if tp in assigned:
                self.ctx.clients.consumer.seek(tp, records[0].offset)
        return False

    def queued(self, offsets: dict[TopicPartition, int]) -> None:
        self._queued.update(offsets)

    def behind(self) -> dict[TopicPartition, int | None]:
        """Each assigned partition with its records not yet queued, as far as this run knows
        (``None``: not fetched yet)."""
        consumer, out = self.ctx.clients.consumer, {}
        for tp in consumer.assignment():
            high, queued = consumer.highwater(tp), self._queued.get(tp)
            out[tp] = None if high is None or queued is None else max(0, high - queued)
        return out

    async def revoke(
        self, revoked: set[TopicPartition], drain: Callable[[], Awaitable[None]]
    ) -> None:
        """Partitions are being revoked: finish routing the batch in hand (it is produced and
        committed before the revoke completes, never after), then drain and commit. A failed
        drain is recorded, not raised: aiokafka would only log it."""
        async with self.routing:
            if revoked:
                self.generation += 1
            try:
                await drain()
            except Exception as exc:  # noqa: BLE001 - re-raised by the fetch loop, the flow stops
                self.revoke_error = exc
                self.ctx.clients.log.error("revoke_drain_failed", error=repr(exc))

    async def moved_positions(self, batch: Batch) -> dict[TopicPartition, int]:
        """Positions of partitions with no record in ``batch`` that moved with no record
        returned: past transaction markers and aborted records of a transactional source (and
        mirror-written batches skipped unread). Committing them lets lag reach 0 there; it is
        never ahead, as every record before a position was returned and queued. A partition
        with records in ``batch`` is left to the batch's own offsets (which stop at a refused
        record), and moves at the next fetch that brings none of it."""
        moved = {}
        for tp in self.ctx.clients.consumer.assignment():
            if tp in batch or self.ctx.clients.consumer.highwater(tp) is None:
                continue  # not fetched yet: no position worth committing
            position = await self.ctx.clients.consumer.position(tp)
            if position > self._queued.get(tp, -1):
                moved[tp] = position
                self.set_lag(tp, position)
        return moved

    def set_lag(self, tp: TopicPartition, next_offset: int) -> None:
        high = self.ctx.clients.consumer.highwater(tp)
        if high is not None:
            gauge = self._lag.get(tp)
            if gauge is None:
                gauge = self._lag[tp] = self.ctx.metrics.lag.labels(
                    **self.ctx.labels, topic=tp.topic, partition=str(tp.partition)
                )
            gauge.set(max(0, high - next_offset))


def take_partitions(consumer: Any, ctx: StageContext, pattern: str, listener: Any) -> None:
    """Subscribe the flow's consumer to its topics (its group assigns the partitions), or,
    for a run given its partitions (one partition set of an exactly-once flow:
    :mod:`aa.mirror.partition_sets`), assign those."""
    assigned = ctx.settings.assigned
    if assigned:
        consumer.assign(list(assigned))
    else:
        consumer.subscribe(pattern=pattern, listener=listener)


class Revocable(Protocol):
    """What the rebalance listener needs of a flow."""

    syncs: OffsetSyncWriter | None
    log: Any
    delivery: Delivery

    async def on_revoke(self, revoked: set[TopicPartition]) -> None: ...

    def on_assigned(self) -> None: ...


class RevokeListener(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka is untyped
    def __init__(self, flow: Revocable) -> None:
        self._flow = flow

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._flow.on_revoke(set(revoked))
        if self._flow.syncs is not None:  # a later assignment starts a new run
            await self._flow.syncs.revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._flow.delivery.regained(set(assigned))
        self._flow.on_assigned()
        self._flow.log.info("partitions_assigned", partitions=len(assigned))


def _detach(records: Sequence[Polled]) -> None:
    """The raw batches of a partition whose fetch held skipped mirror batches get their own
    bytes: a view would keep the whole fetched buffer (in a 3-DC mesh, two thirds skipped)
    until the copy settles, past the in-flight share, which counts the batch alone. W3
    exactly-once held 21-57 MB of such buffers per process. A copy of the batch costs less
    than its re-encoding; a fetch with nothing skipped (W1) keeps its views."""
    for r in records:
        if isinstance(r, RawBatch):
            r.detach()
