"""The produce side of a flow: whole record batches to the target, waiting out a target that
takes nothing for a while (in order, no restart) and failing once it stays away too long."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import IllegalOperation, KafkaTimeoutError, UnknownTopicOrPartitionError
from aiokafka.partitioner import murmur2

from aa.kafka.builders import RawBuilder
from aa.kafka.producers import BatchBuilder, abandon, producer_id
from aa.kafka.records import CODECS, printable
from aa.mirror.context import StageContext
from aa.mirror.errors import FlowError, TransactionBroken
from aa.mirror.limits import TargetLimits, record_size
from aa.mirror.refusals import DEAD_LETTER_REASON
from aa.mirror.settings import FlowSettings
from aa.provenance import SRC, batch_mark

DELIVERY_TIMEOUT_S = 120.0
"""How long a flow waits for a target that takes or acknowledges nothing (a broker restarting,
a leader election) before it fails and restarts: Java's delivery.timeout.ms. Shorter outages are
ridden out inside the flow, in order, with no restart and no re-copy."""

_round_robin = itertools.count()

SOURCE_CODEC = "source"
"""``tuning.compression`` that keeps each source partition's codec (the default)."""

LANES = 2
"""Producers an at-least-once flow sends its copies through (:meth:`Target.lane`). aiokafka
keeps one produce request in flight per broker and producer: with one producer, the six
produce rounds a 16 MB fetch needs ran one after the other (docs/benchmarks-history.md, W4). An
exactly-once flow keeps its one transactional producer."""


def track(producer: AIOKafkaProducer, topic: str) -> None:
    """Keep ``topic`` in the producer's metadata for good.

    aiokafka's client asks for every topic's metadata until one topic is added explicitly
    (``send`` to the offset-sync topic, created after the producer started); from then on it
    asks only for the topics added. ``send_batch`` adds none that the first answer already
    held, so a target topic dropped out: its queued batches had no leader and waited a whole
    request timeout (30 s) before the retry re-added it.
    """
    producer.client.add_topic(topic)


def _own_topics(s: FlowSettings) -> list[str]:
    """The flow's own topics its first producer writes with ``send``: each must stay in the
    producer's metadata like the target topics (:func:`track`). One the producer's first
    metadata already held is never added by ``send``, and dropped out of it once the first
    target topic was tracked: a dead letter sent before any copy waited for a leader forever
    (exactly-once, a record over max.message.bytes among the first of a fetch)."""
    topics = [s.sync_topic] if s.offset_syncs else []
    if s.on_error == "dead-letter":
        topics.append(s.dead_letter_topic)
    if s.delivery == "exactly-once":
        topics.append(s.eos_offsets_topic)
    return topics


def _batch_mark(producer: AIOKafkaProducer, target: str) -> list[tuple[str, bytes]]:
    """The mark as a header list; empty if the producer has no id (a mirror producer is
    idempotent, so once started it has one)."""
    pid = producer_id(producer)
    return [batch_mark(target, pid)] if pid is not None else []


def partition_for(key: bytes | None, partitions: int) -> int:
    """Kafka's default partitioning (murmur2 of the key), for targets with fewer partitions."""
    if key is None:
        return next(_round_robin) % partitions
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


class Target:
    """Sends batches and dead letters to the flow's target; ``waiting`` is the one place that
    decides when a silent target fails the flow."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self._tracked: set[str] = set()
        """Target topics the producers' metadata must keep (see :func:`track`)."""
        self.producers = (ctx.clients.producer, *ctx.clients.lanes)
        """The copies' producers: target partition ``p`` goes through ``p % len``."""
        for topic in _own_topics(ctx.settings):  # written by `send` on the first producer
            track(ctx.clients.producer, topic)
        self.marks = [_batch_mark(p, ctx.settings.target) for p in self.producers]
        """Per lane, ``aa-batch`` for the first record of each batch its producer sends
        (:mod:`aa.kafka.fetched`: the mark names the producer id the batch carries)."""
        self._lanes: dict[tuple[str, int], tuple[int, asyncio.Future[Any] | None]] = {}
        """Per target partition, its lane and the last batch submitted through it."""
        self._known: dict[tuple[int, str], int] = {}
        """Per lane and target topic, the partition count its producer's metadata holds."""
        fixed = ctx.settings.compression
        self._codec = None if fixed == SOURCE_CODEC else CODECS[fixed or "none"]
        """The copies' codec (``None``: each source partition's own, :meth:`codec`)."""
        self._producer_codec = CODECS[ctx.settings.producer_compression or "none"]
        self.source_codecs: Mapping[TopicPartition, int] = {}
        """Per source partition, the codec of its newest fetched batch
        (:attr:`aa.kafka.switch.LeanRecords.codecs`, given by the flow)."""

    def lane(self, topic: str, partition: int, wide: bool) -> int:
        """The lane (index into :attr:`producers`) of a new batch for ``topic/partition``:
        ``partition % LANES`` for a partition fetched a full batch or more at a time
        (``wide``: several produce rounds per fetch), else the first, so a flow that keeps up
        sends one produce request per fetch (W3: more requests cost CPU per record). A
        partition changes lane only once its last batch was acknowledged, so its batches
        reach the target in order, each producer's in its own sequence."""
        want = partition % len(self.producers) if wide else 0
        lane, last = self._lanes.get((topic, partition), (want, None))
        if lane != want and (last is None or last.done()):
            lane = want
        self._lanes[(topic, partition)] = (lane, last)
        return lane

    def codec(self, source: TopicPartition) -> int:
        """The codec of the target batches that copy ``source``: the flow's fixed one, or with
        ``compression: source`` the codec of the source partition's newest fetched batch."""
        if self._codec is not None:
            return self._codec
        return self.source_codecs.get(source, 0)

    def new_batch(self, limits: TargetLimits | None, codec: int) -> Any:
        """A batch builder in ``codec`` (:meth:`codec`), no larger than the target topic takes
        (its max.message.bytes)."""
        size = self._size(limits)
        if size == self.ctx.settings.batch_size and codec == self._producer_codec:
            return self.ctx.clients.producer.create_batch()  # the same, built by the producer
        return BatchBuilder(size, codec, is_transactional=self.ctx.delivery.transactional)

    def new_raw_batch(self, limits: TargetLimits | None, codec: int) -> RawBuilder:
        """A batch the batch path of :mod:`aa.mirror.restamp` appends to (same size and
        codec as :meth:`new_batch`)."""
        return RawBuilder(
            self._size(limits), codec, is_transactional=self.ctx.delivery.transactional
        )

    def _size(self, limits: TargetLimits | None) -> int:
        size = self.ctx.settings.batch_size
        cap = limits.batch_cap if limits is not None else None
        return size if cap is None else min(cap, size)

    async def submit(
        self, builder: Any, topic: str, partition: int, lane: int = 0
    ) -> asyncio.Future[Any]:
        """Hand a full batch to the producer of its ``lane`` (:meth:`lane`); its future resolves
        once the target acked it."""
        if topic not in self._tracked:
            for producer in self.producers:
                track(producer, topic)
            self._tracked.add(topic)
        producer = self.producers[lane]
        if partition >= self._known.get((lane, topic), 0):
            await self._learn(lane, topic, partition)
        waited = 0.0
        while True:
            try:
                fut: asyncio.Future[Any] = await producer.send_batch(
                    builder, topic, partition=partition
                )
            except (KafkaTimeoutError, UnknownTopicOrPartitionError) as exc:
                # the partition's previous batch, or its metadata, waited request_timeout_ms:
                # the target is down or electing a leader. Wait on (backpressure), in order.
                waited += self.ctx.settings.request_timeout_ms / 1000
                self.waiting(f"{topic}/{partition}", waited, exc)
            except IllegalOperation as exc:  # exactly-once: the transaction is no longer open
                if not self.ctx.delivery.transactional:
                    raise
                raise TransactionBroken(
                    f"{self.ctx.settings.name}: {self.ctx.settings.target} ended the flow's "
                    f"transaction ({exc}); it is aborted and the flow starts again from its "
                    "last commit"
                ) from exc
            else:
                self._lanes[(topic, partition)] = (lane, fut)
                return fut

    async def _learn(self, lane: int, topic: str, partition: int) -> None:
        """Refresh the lane's producer metadata until it holds ``topic/partition``: aiokafka
        refuses a partition its metadata lacks (an assertion, which crashed the flow), and a
        target topic grows while the flow runs (its topic sync, or another flow into this DC:
        partition counts are the topology's, see :mod:`aa.mirror.topics`)."""
        producer = self.producers[lane]
        timeout = self.ctx.settings.request_timeout_ms / 1000
        waited, step, warn_at = 0.0, 0.1, timeout
        while True:
            known = producer.client.cluster.partitions_for_topic(topic)
            if known is None:
                return  # not in its metadata yet: send_batch waits for it
            if partition in known:
                self._known[(lane, topic)] = len(known)
                return
            await producer.client.force_metadata_update()
            if partition not in (producer.client.cluster.partitions_for_topic(topic) or ()):
                await asyncio.sleep(step)  # a broker's metadata behind the controller's
                waited += step
                if waited >= warn_at:
                    warn_at += timeout
                    self.waiting(f"{topic}/{partition} in its metadata", waited, None)

    async def patiently(self, work: Any, what: str) -> Any:
        """Await ``work`` (settling copies, writing syncs) while the target takes its time: a
        ``target_waiting`` warning every request timeout, a retriable failure after
        :data:`DELIVERY_TIMEOUT_S`."""
        task = asyncio.ensure_future(work)
        step = self.ctx.settings.request_timeout_ms / 1000
        waited = 0.0
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=step)
                if done:
                    return task.result()
                waited += step
                self.waiting(what, waited, None)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    def waiting(self, what: str, waited_s: float, exc: BaseException | None) -> None:
        """The target has taken or acknowledged nothing for ``waited_s``: warn, and fail the
        flow (retriable) once that reaches :data:`DELIVERY_TIMEOUT_S`."""
        s = self.ctx.settings
        self.ctx.metrics.errors.labels(**self.ctx.labels, kind="target-waiting").inc()
        self.ctx.clients.log.warning(
            "target_waiting", waiting_for=what, waited_s=round(waited_s, 1), error=repr(exc)
        )
        if waited_s >= DELIVERY_TIMEOUT_S:
            raise FlowError(
                f"{s.name}: {s.target} took or acknowledged no {what} for {waited_s:.0f} s "
                f"({exc!r}); the flow restarts from its last commit",
                kind="target-timeout",
                retriable=True,
            )

    async def dead_letter(
        self,
        record: Any,
        tp: TopicPartition,
        reason: str,
        *,
        keep_value: bool = True,
        keep_timestamp: bool = True,
    ) -> asyncio.Future[Any]:
        """Send ``record`` to the dead-letter topic with why; the future of its delivery."""
        ref = f"{self.ctx.settings.source}/{tp.topic}/{tp.partition}/{record.offset}"
        headers = [
            # a name that is not UTF-8 goes in escaped: aiokafka's producer takes str names
            *((printable(k), v) for k, v in record.headers or ()),
            (DEAD_LETTER_REASON, reason.encode()),
            (SRC, ref.encode()),
        ]
        key, value = record.key, record.value
        if not keep_value:  # a reference, so the dead-letter record itself fits
            value = orjson.dumps({"src": ref, "reason": reason, "bytes": record_size(record)})
        # a refused timestamp would be refused again: the dead letter gets the current time
        ts = record.timestamp if keep_timestamp else None
        fut: asyncio.Future[Any] = await self.ctx.clients.producer.send(
            self.ctx.settings.dead_letter_topic, value, key, None, ts, headers
        )
        self.ctx.clients.log.warning("dead_lettered", src=ref, reason=reason)
        return fut


async def stop_target(producer: AIOKafkaProducer, flow: str, *, failed: bool) -> None:
    """Stop the flow's producer; when the flow failed, abandon what the target did not take.
    Registered as soon as the producer started, before the stages exist."""
    if failed:
        stopped = FlowError(f"{flow}: the flow stopped", kind="stopped", retriable=True)
        abandon(producer, stopped)
    await producer.stop()
