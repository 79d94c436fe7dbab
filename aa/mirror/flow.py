"""One flow A→B: consume from A, route each record, produce to B, and commit A's offsets only
after B acknowledged every record before them (at-least-once), or in one transaction on B
with the copies (exactly-once; see :mod:`aa.mirror.delivery`).

Pipeline: the fetch loop turns each ``getmany`` batch into a :class:`Pending` (the send futures
and the offsets they advance) and puts it on a bounded queue — that bound is the backpressure;
the commit loop settles pendings in order and commits. A record the target refuses stops the
flow before its offset is committed, or is dead-lettered when ``on_error`` says so; nothing is
skipped silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import (
    CommitFailedError,
    CorruptRecordException,
    IllegalStateError,
    InvalidTimestampError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    UnknownError,
    UnknownTopicOrPartitionError,
)
from aiokafka.partitioner import murmur2
from aiokafka.producer.message_accumulator import BatchBuilder

from aa.admin import ClusterAdmin
from aa.logs import get_logger
from aa.mirror.delivery import Delivery, delivery_for
from aa.mirror.eos import ExactlyOnce, is_fenced
from aa.mirror.errors import FlowError as FlowError  # re-exported: callers import it here
from aa.mirror.limits import TargetLimits, record_size, target_limits
from aa.mirror.settings import FlowSettings
from aa.mirror.topics import TopicSync
from aa.mirror.types import Malformed, Router, Skip
from aa.observe.metrics import Metrics
from aa.offsets.writer import OffsetSyncWriter, ensure_internal_topic
from aa.provenance import MIRRORED_AT, SRC

DEAD_LETTER_REASON = "aa-dlq-reason"
REFUSED = {
    "malformed-headers": "malformed provenance headers",
    "record-too-large": "a record the target refuses as too large",
    "invalid-record": "a record the target refuses as invalid",
    "invalid-timestamp": "a record whose timestamp the target refuses",
}
"""What each kind of refused record is called in the message that stops a flow."""

BROKER_REFUSALS: dict[type[BaseException], str] = {
    MessageSizeTooLargeError: "record-too-large",
    RecordListTooLargeError: "record-too-large",
    CorruptRecordException: "invalid-record",
    InvalidTimestampError: "invalid-timestamp",
    UnknownError: "invalid-record",  # INVALID_RECORD (87) has no aiokafka class
}
"""Produce errors that no retry fixes (the broker refused records), by refusal kind."""


REBALANCE_TIMEOUT_MS = 300_000
"""How long the group waits for a member's revoke (drain and commit) before evicting it: the
Java client's max.poll.interval.ms. aiokafka defaults to the session timeout (10 s), which
evicted a member whose drain waited on a slow target, so its commit was refused."""

DELIVERY_TIMEOUT_S = 120.0
"""How long a flow waits for a target that takes or acknowledges nothing (a broker restarting,
a leader election) before it fails and restarts: Java's delivery.timeout.ms. Shorter outages are
ridden out inside the flow, in order, with no restart and no re-copy."""

_round_robin = itertools.count()


def _never_expire(producer: AIOKafkaProducer) -> None:
    """Make the producer wait for a partition's leader instead of expiring the batch.

    aiokafka fails a queued batch whose partition has had no leader for ``request_timeout_ms``
    (``NotLeaderForPartitionError``) even on an idempotent producer, and then sends the batches
    queued behind it: the target gets records out of order, and the flow's restart copies them
    again. No option controls it: the accumulator's private TTL is set here; if a later aiokafka
    renames it, the flow refuses to start rather than silently reorder.
    """
    accumulator = getattr(producer, "_message_accumulator", None)
    if accumulator is None or not hasattr(accumulator, "_batch_ttl"):
        raise RuntimeError(
            "this aiokafka has no producer._message_accumulator._batch_ttl: aa cannot keep a "
            "leaderless target partition's batches in order; install the aiokafka version "
            "pyproject.toml pins"
        )
    accumulator._batch_ttl = float("inf")


def _track(producer: AIOKafkaProducer, topic: str) -> None:
    """Keep ``topic`` in the producer's metadata for good.

    aiokafka's client asks for every topic's metadata until one topic is added explicitly
    (``send`` to the offset-sync topic, created after the producer started); from then on it
    asks only for the topics added. ``send_batch`` adds none that the first answer already
    held, so a target topic dropped out: its queued batches had no leader and waited a whole
    request timeout (30 s) before the retry re-added it.
    """
    producer.client.add_topic(topic)


def _abandon(producer: AIOKafkaProducer, exc: BaseException) -> None:
    """Fail every batch not acknowledged yet, so stopping does not wait for a target that is
    down, and nothing queued behind a failed batch is sent after it (its records are copied
    again by the next run, from the last commit)."""
    producer._message_accumulator.fail_all(exc)


def _partition_for(key: bytes | None, partitions: int) -> int:
    """Kafka's default partitioning (murmur2 of the key), for targets with fewer partitions."""
    if key is None:
        return next(_round_robin) % partitions
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error to report from a task group: a FlowError if any, else the first leaf."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return next((e for e in leaves if isinstance(e, FlowError)), leaves[0])


@dataclass(slots=True)
class Pending:
    """One fetched batch on its way to the target."""

    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    sends: list[tuple[asyncio.Future[Any], list[Any], str]] = field(default_factory=list)
    """Per submitted batch: its delivery future, the source records it holds (in order, so
    the i-th record landed at the batch's base offset + i), and the target topic."""
    copied: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    timestamps: list[int] = field(default_factory=list)
    malformed: FlowError | None = None


class _OnRevoke(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka is untyped
    def __init__(self, flow: MirrorFlow) -> None:
        self._flow = flow

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._flow.on_revoke(set(revoked))
        if self._flow.syncs is not None:  # a later assignment starts a new run
            await self._flow.syncs.revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self._flow.log.info("partitions_assigned", partitions=len(assigned))


class MirrorFlow:
    """Copies the records of one ordered DC pair. ``run`` returns when ``stop`` is set."""

    def __init__(
        self,
        settings: FlowSettings,
        router: Router,
        metrics: Metrics,
        delivery: Delivery | None = None,
    ) -> None:
        self.settings = settings
        self.delivery = delivery or delivery_for(settings)
        self.syncs: OffsetSyncWriter | None = None
        self.target_admin: ClusterAdmin | None = None
        self.router = router
        self.metrics = metrics
        self.log = get_logger("aa.mirror", flow=settings.name)
        self._queue: asyncio.Queue[Pending | None] = asyncio.Queue(settings.max_inflight_batches)
        self._ready: dict[TopicPartition, int] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._tracked: set[str] = set()  # target topics the producer's metadata must keep
        self._topics: TopicSync | None = None
        self._committer: asyncio.Task[None] | None = None
        self._labels = {"source": settings.source, "target": settings.target}
        self.copied_total = 0
        self.topic_sync_error: str | None = None
        """The last periodic topic sync's error (``None`` once one succeeds); in /healthz."""
        self._uncounted: list[Pending] = []
        """Settled copies not counted yet (exactly-once: until their transaction commits)."""
        self._limits: dict[str, TargetLimits] = {}
        """Per target topic, what it refuses (read when first seen, refreshed by topic sync)."""
        self._queued: dict[TopicPartition, int] = {}
        """Per source partition, the offset the last queued pending advances it to."""
        self._routing = asyncio.Lock()
        """Held while a fetched batch is routed and queued; a revoke waits for it."""
        self._generation = 0
        """Revokes so far: a batch fetched before one is dropped, never produced after it."""
        self._keep_partitions: dict[str, bool] = {}
        """Per target topic: records keep their source partition (else: by key hash)."""
        self._lacking: set[tuple[str, int]] = set()
        """(target topic, partition) the target lacked after an immediate topic sync."""

    async def run(self, stop: asyncio.Event) -> None:
        s = self.settings
        async with contextlib.AsyncExitStack() as stack:
            source_admin = await stack.enter_async_context(
                ClusterAdmin(s.source, **s.source_client)
            )
            target_admin = await stack.enter_async_context(
                ClusterAdmin(s.target, **s.target_client)
            )
            self._topics = TopicSync(
                source_admin,
                target_admin,
                self.router,
                s.config_exclude,
                dead_letter_topic=s.dead_letter_topic if s.on_error == "dead-letter" else None,
            )
            if s.topic_sync:
                await self._topics.sync()
            self.target_admin = target_admin
            self._producer = AIOKafkaProducer(
                **s.target_client,
                acks="all",
                enable_idempotence=True,
                linger_ms=s.linger_ms,
                max_batch_size=s.batch_size,
                compression_type=s.compression,
                request_timeout_ms=s.request_timeout_ms,
                **self.delivery.producer_options(),
            )
            await self._producer.start()
            self._tracked = set()
            _never_expire(self._producer)
            stack.push_async_exit(self._stop_producer)
            if s.offset_syncs:
                await ensure_internal_topic(target_admin, s.sync_topic)
                self.syncs = OffsetSyncWriter(self._producer, s.sync_topic)
            await self.delivery.start(self)
            group = self.delivery.group_id()
            self._consumer = AIOKafkaConsumer(
                **s.source_client,
                group_id=group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
                fetch_max_bytes=s.fetch_max_bytes,
                max_partition_fetch_bytes=s.max_partition_fetch_bytes,
                metadata_max_age_ms=int(s.topic_sync_interval_s * 1000),
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            )
            await self._consumer.start()
            stack.push_async_callback(self._consumer.stop)
            listener = _OnRevoke(self) if group is not None else None
            self._consumer.subscribe(pattern=self.router.subscription(), listener=listener)
            self.metrics.up.labels(**self._labels).set(1)
            self.log.info(
                "flow_started",
                group=group,
                delivery=s.delivery,
                pattern=self.router.subscription(),
            )
            try:
                async with asyncio.TaskGroup() as tg:
                    self._committer = tg.create_task(self._commit_loop())
                    if s.topic_sync:
                        tg.create_task(self._sync_loop(stop))
                    await self._fetch_loop(stop)
                    await self._queue.put(None)
            except BaseExceptionGroup as group:
                await self.delivery.abort(self)
                raise _first_error(group) from None
            finally:
                self.metrics.up.labels(**self._labels).set(0)
        self.log.info("flow_stopped", copied=self.copied_total)

    # -- fetch side -------------------------------------------------------------------------

    async def _fetch_loop(self, stop: asyncio.Event) -> None:
        assert self._consumer is not None
        while not stop.is_set():
            generation = self._generation
            batch = await self._consumer.getmany(
                timeout_ms=200, max_records=self.settings.max_poll_records
            )
            async with self._routing:
                if generation != self._generation:
                    # Fetched before a revoke: not routed. Partitions still ours are fetched
                    # again from here; the others, by their new owner from the commit.
                    assigned = self._consumer.assignment()
                    for tp, records in batch.items():
                        if tp in assigned:
                            self._consumer.seek(tp, records[0].offset)
                    continue
                if batch:
                    batch = self.delivery.admit(self, batch)
                if not batch:
                    moved = await self._moved_positions()
                    if moved:
                        await self.delivery.before_forward()
                        await self._queue.put(Pending(offsets=moved))
                        self._queued.update(moved)
                else:
                    await self.delivery.before_forward()
                    pending = await self._forward(batch)
                    await self._queue.put(pending)
                    self._queued.update(pending.offsets)
                    if pending.malformed is not None:
                        await self.drain()
                        raise pending.malformed
            await self.delivery.after_forward(self)  # idle or not: commit what is due

    async def on_revoke(self, revoked: set[TopicPartition]) -> None:
        """Partitions are being revoked: finish routing the batch in hand (it is produced and
        committed before the revoke completes, never after), then drain and commit."""
        async with self._routing:
            if revoked:
                self._generation += 1
            await self.drain()

    async def _moved_positions(self) -> dict[TopicPartition, int]:
        """Positions that moved with no record returned: past transaction markers and aborted
        records of a transactional source. Committing them lets lag reach 0 there; it is never
        ahead, as every record before a position was returned and queued."""
        assert self._consumer is not None
        moved = {}
        for tp in self._consumer.assignment():
            if self._consumer.highwater(tp) is None:
                continue  # not fetched yet: no position worth committing
            position = await self._consumer.position(tp)
            if position > self._queued.get(tp, -1):
                moved[tp] = position
                self._set_lag(tp, position)
        return moved

    async def _forward(self, batch: dict[TopicPartition, list[Any]]) -> Pending:
        """Route a fetched batch and hand it to the producer as whole record batches.

        Records go into aiokafka ``BatchBuilder``s per target partition (no per-record
        ``send``): the per-record work is the routing decision and one ``append``.
        """
        assert self._producer is not None
        router = self.router
        pending = Pending()
        now_ms = int(time.time() * 1000)
        stamp = [(MIRRORED_AT, str(now_ms).encode())]
        skipped: Counter[tuple[str, str]] = Counter()
        for tp, records in batch.items():
            if self.syncs is not None:
                self.syncs.saw(tp, records[0].offset)
            target = await self._target_topic(tp.topic)
            if target is None:
                skipped[(tp.topic, "not-routed")] += len(records)
                pending.offsets[tp] = records[-1].offset + 1
                continue
            parts, same_partition = await self._placement(tp, target)
            if not same_partition and self.syncs is not None:
                await self.syncs.repartitioned(tp, target, records)  # translation refuses
            limits = self._limits.get(target)
            open_batches: dict[int, tuple[Any, list[Any]]] = {}
            nbytes = forwarded = 0
            routes = router.route_batch(tp.topic, tp.partition, records)
            for r, route in zip(records, routes, strict=True):
                if type(route) is list:
                    refused = limits.refusal(r, now_ms) if limits is not None else None
                    if refused is not None:
                        # The broker would refuse the whole batch holding it, and aiokafka's
                        # idempotent producer does not recover from that: refuse it here.
                        if await self._refuse(pending, tp, r, refused.kind, refused.detail):
                            break
                        continue
                    p = tp.partition if same_partition else _partition_for(r.key, parts)
                    slot = open_batches.get(p)
                    if slot is None:
                        slot = open_batches[p] = (self._new_batch(limits), [])
                    headers = route + stamp
                    if (
                        slot[0].append(
                            timestamp=r.timestamp, key=r.key, value=r.value, headers=headers
                        )
                        is None
                    ):
                        await self._submit(slot, target, p, pending)
                        slot = open_batches[p] = (self._new_batch(limits), [])
                        # an empty batch takes any record; the size was checked above
                        slot[0].append(
                            timestamp=r.timestamp, key=r.key, value=r.value, headers=headers
                        )
                    slot[1].append(r)
                    nbytes += len(r.value or b"") + len(r.key or b"")
                    forwarded += 1
                elif isinstance(route, Skip):
                    skipped[(tp.topic, route.reason)] += 1
                elif isinstance(route, Malformed) and await self._refuse(
                    pending, tp, r, "malformed-headers", route.error
                ):
                    break
            for p, slot in open_batches.items():
                if slot[1]:
                    await self._submit(slot, target, p, pending)
            if pending.malformed is not None:
                break  # refused with on_error=fail: nothing after it in this batch
            pending.offsets[tp] = records[-1].offset + 1
            pending.copied[tp.topic] += forwarded
            pending.bytes[tp.topic] += nbytes
            pending.timestamps.append(records[-1].timestamp)
            self._set_lag(tp, records[-1].offset + 1)
        for (topic, reason), n in skipped.items():
            self.metrics.skipped.labels(**self._labels, topic=topic, reason=reason).inc(n)
        return pending

    async def _submit(
        self, slot: tuple[Any, list[Any]], target: str, partition: int, pending: Pending
    ) -> None:
        assert self._producer is not None
        builder, held = slot
        if target not in self._tracked:
            _track(self._producer, target)
            self._tracked.add(target)
        waited = 0.0
        while True:
            try:
                fut = await self._producer.send_batch(builder, target, partition=partition)
                break
            except (KafkaTimeoutError, UnknownTopicOrPartitionError) as exc:
                # the partition's previous batch, or its metadata, waited request_timeout_ms:
                # the target is down or electing a leader. Wait on (backpressure), in order.
                waited += self.settings.request_timeout_ms / 1000
                self._target_waiting(f"{target}/{partition}", waited, exc)
        pending.sends.append((fut, held, target))

    async def _refuse(
        self, pending: Pending, tp: TopicPartition, record: Any, kind: str, detail: str
    ) -> bool:
        """A record the target must not get: dead-letter it, or (``on_error: fail``) stop the
        flow before it. Returns whether the flow stops."""
        s = self.settings
        self.metrics.errors.labels(**self._labels, kind=kind).inc()
        if s.on_error == "fail":
            pending.offsets[tp] = record.offset  # commit up to, not past, the refused one
            what = REFUSED.get(kind, "a record the target refuses")
            pending.malformed = FlowError(
                f"{s.name}: {what} in {tp.topic}/{tp.partition}@{record.offset}: {detail}; the "
                "flow stops before this record (fix the target topic's config, or set "
                f"on_error: dead-letter to route such records to {s.dead_letter_topic} in "
                f"{s.target})",
                kind=kind,
                retriable=False,
            )
            return True
        fut = await self._dead_letter(
            record,
            tp,
            f"{kind}: {detail}",
            keep_value=kind != "record-too-large",
            keep_timestamp=kind != "invalid-timestamp",
        )
        pending.sends.append((fut, [record], s.dead_letter_topic))
        self.metrics.dead_lettered.labels(**self._labels, topic=tp.topic, reason=kind).inc()
        return False

    def _new_batch(self, limits: TargetLimits | None) -> Any:
        """A batch builder no larger than the target topic takes (its max.message.bytes)."""
        assert self._producer is not None
        cap = limits.batch_cap if limits is not None else None
        if cap is None or cap >= self.settings.batch_size:
            return self._producer.create_batch()
        compression = self.settings.compression
        # aiokafka's own codec table (the producer's compression, on a smaller batch)
        codec = AIOKafkaProducer._COMPRESSORS[compression][1] if compression else 0
        return BatchBuilder(cap, codec, is_transactional=self.delivery.transactional)

    async def _placement(self, tp: TopicPartition, target: str) -> tuple[int, bool]:
        """The target's partition count, and whether ``tp``'s records keep their partition.

        Decided once per target topic, when first seen: keep partitions when the target has at
        least the source's, otherwise every record goes by key hash (one key never lands in two
        partitions). When the source grows later, a partition the target lacks triggers a topic
        sync right away, so no record of an existing partition ever changes target partition
        while topic sync catches up; only if the target still lacks it do its records go by
        key hash (with a warning).
        """
        assert self._consumer is not None
        assert self._producer is not None
        parts = self._topics.partitions.get(target, 0) if self._topics else 0
        keep = self._keep_partitions.get(target)
        if keep is None:
            source_parts = len(self._consumer.partitions_for_topic(tp.topic) or ())
            keep = self._keep_partitions[target] = parts >= source_parts
        if keep and tp.partition >= parts and (target, tp.partition) not in self._lacking:
            parts = await self._grow_target(tp, target)
        return parts, keep and tp.partition < parts

    async def _grow_target(self, tp: TopicPartition, target: str) -> int:
        """Topic sync now for a source partition the target lacks; the target's count after."""
        assert self._producer is not None
        assert self._topics is not None
        if self.settings.topic_sync:
            await self._topics.sync(only=tp.topic)
        await self._producer.client.force_metadata_update()
        parts = len(await self._producer.partitions_for(target))
        self._topics.partitions[target] = parts
        if tp.partition >= parts:
            self._lacking.add((target, tp.partition))  # tried once; periodic syncs go on
            self.log.warning(
                "target_lacks_partition",
                topic=target,
                partition=tp.partition,
                target_partitions=parts,
                detail="its records go by key hash until the target has the partition",
            )
        return parts

    async def _target_topic(self, source_topic: str) -> str | None:
        target = self.router.target_topic(source_topic)
        if (
            target is not None
            and self._topics is not None
            and target not in self._topics.partitions
        ):
            if self.settings.topic_sync:
                await self._topics.sync(only=source_topic)
            if target not in self._topics.partitions:
                assert self._producer is not None
                parts = await self._producer.partitions_for(target)
                self._topics.partitions[target] = len(parts)
        if target is not None and target not in self._limits and self.target_admin is not None:
            found = await target_limits(self.target_admin, [target])
            self._limits[target] = found.get(target, TargetLimits(target))
        return target

    def _set_lag(self, tp: TopicPartition, next_offset: int) -> None:
        assert self._consumer is not None
        high = self._consumer.highwater(tp)
        if high is not None:
            self.metrics.lag.labels(
                **self._labels, topic=tp.topic, partition=str(tp.partition)
            ).set(max(0, high - next_offset))

    async def _dead_letter(
        self,
        record: Any,
        tp: TopicPartition,
        reason: str,
        *,
        keep_value: bool = True,
        keep_timestamp: bool = True,
    ) -> asyncio.Future[Any]:
        assert self._producer is not None
        ref = f"{self.settings.source}/{tp.topic}/{tp.partition}/{record.offset}"
        headers = [
            *(record.headers or ()),
            (DEAD_LETTER_REASON, reason.encode()),
            (SRC, ref.encode()),
        ]
        key, value = record.key, record.value
        if not keep_value:  # a reference, so the dead-letter record itself fits
            value = orjson.dumps({"src": ref, "reason": reason, "bytes": record_size(record)})
        # a refused timestamp would be refused again: the dead letter gets the current time
        ts = record.timestamp if keep_timestamp else None
        fut: asyncio.Future[Any] = await self._producer.send(
            self.settings.dead_letter_topic, value, key, None, ts, headers
        )
        self.log.warning("dead_lettered", src=ref, reason=reason)
        return fut

    # -- commit side ------------------------------------------------------------------------

    async def _commit_loop(self) -> None:
        last = time.monotonic()
        while True:
            pending = await self._queue.get()
            try:
                if pending is None:
                    if self.syncs is not None:
                        await self._patiently(self.syncs.flush(), "offset syncs")
                    await self.delivery.commit(self, final=True)
                    return
                await self._patiently(self._settle(pending), "copies")
                self._ready.update(pending.offsets)
                now = time.monotonic()
                if self._queue.empty() or now - last >= self.settings.commit_interval_s:
                    if self.syncs is not None:  # the open runs: translation up to the commit
                        await self._patiently(self.syncs.flush(), "offset syncs")
                    await self.delivery.commit(self, final=False)
                    last = now
            finally:
                self._queue.task_done()

    async def _patiently(self, work: Any, what: str) -> Any:
        """Await ``work`` (settling copies, writing syncs) while the target takes its time: a
        ``target_waiting`` warning every request timeout, a retriable failure after
        :data:`DELIVERY_TIMEOUT_S`."""
        task = asyncio.ensure_future(work)
        step = self.settings.request_timeout_ms / 1000
        waited = 0.0
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=step)
                if done:
                    return task.result()
                waited += step
                self._target_waiting(what, waited, None)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    def _target_waiting(self, what: str, waited_s: float, exc: BaseException | None) -> None:
        s = self.settings
        self.metrics.errors.labels(**self._labels, kind="target-waiting").inc()
        self.log.warning(
            "target_waiting", waiting_for=what, waited_s=round(waited_s, 1), error=repr(exc)
        )
        if waited_s >= DELIVERY_TIMEOUT_S:
            raise FlowError(
                f"{s.name}: {s.target} took or acknowledged no {what} for {waited_s:.0f} s "
                f"({exc!r}); the flow restarts from its last commit",
                kind="target-timeout",
                retriable=True,
            )

    async def _stop_producer(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        """Stop the producer; when the flow fails, abandon what the target did not take."""
        assert self._producer is not None
        if exc_type is not None:
            stopped = FlowError(
                f"{self.settings.name}: the flow stopped", kind="stopped", retriable=True
            )
            _abandon(self._producer, stopped)
        await self._producer.stop()

    async def _settle(self, pending: Pending) -> None:
        futures = [f for f, _, _ in pending.sends]
        results = await asyncio.gather(*futures, return_exceptions=True)
        for (_, held, target), result in zip(pending.sends, results, strict=True):
            if isinstance(result, BaseException):
                for record in held:
                    await self._refused(record, target, result, alone=len(held) == 1)
            elif self.syncs is not None and held:
                await self._write_syncs(held, target, result)
        self._uncounted.append(pending)
        if not self.delivery.transactional:
            self.publish_counts()

    def publish_counts(self) -> None:
        """Count the settled copies as replicated (exactly-once: once their transaction
        committed; see :meth:`discard_counts`)."""
        now = time.time()
        hist = self.metrics.latency.labels(**self._labels)
        for pending in self._uncounted:
            for ts in pending.timestamps:
                hist.observe(max(0.0, now - ts / 1000))
            for topic, n in pending.copied.items():
                if n:
                    self.metrics.records.labels(**self._labels, topic=topic).inc(n)
                    self.metrics.bytes.labels(**self._labels, topic=topic).inc(pending.bytes[topic])
                    self.copied_total += n
        self._uncounted.clear()

    def discard_counts(self) -> None:
        """The settled copies were aborted: they never count."""
        self._uncounted.clear()

    async def _write_syncs(self, held: list[Any], target: str, meta: Any) -> None:
        """Offset syncs for a batch that kept its partition (not for dead letters or
        re-partitioned targets, which translation refuses)."""
        assert self.syncs is not None
        tp = TopicPartition(held[0].topic, held[0].partition)
        if meta.partition != tp.partition or target != self.router.target_topic(tp.topic):
            return
        if self.syncs.failed:
            raise FlowError(
                f"{self.settings.name}: writing offset syncs to {self.syncs.topic} in "
                f"{self.settings.target} failed: {self.syncs.last_error!r}",
                kind="offset-sync",
                retriable=True,
            )
        waited = 0.0
        while True:
            try:
                await self.syncs.copied(tp, target, held, meta.offset)
            except KafkaTimeoutError as exc:  # the sync topic's buffer stayed full
                waited += self.settings.request_timeout_ms / 1000
                self._target_waiting(self.syncs.topic, waited, exc)
            else:
                return

    async def _refused(self, record: Any, target: str, exc: BaseException, *, alone: bool) -> None:
        """The target refused a batch holding ``record`` (``alone``: the only one in it)."""
        s = self.settings
        where = f"{record.topic}/{record.partition}@{record.offset}"
        if isinstance(self.delivery, ExactlyOnce) and is_fenced(exc):
            raise self.delivery.fenced(exc) from exc
        kind = BROKER_REFUSALS.get(type(exc))
        if kind is None:
            self.metrics.errors.labels(**self._labels, kind=type(exc).__name__).inc()
            raise FlowError(
                f"{s.name}: producing {where} to {s.target}/{target} failed: {exc!r}",
                kind=type(exc).__name__,
                retriable=True,
            ) from exc
        self.metrics.errors.labels(**self._labels, kind=kind).inc()
        if s.on_error == "dead-letter" and target != s.dead_letter_topic and alone:
            tp = TopicPartition(record.topic, record.partition)
            reason = f"{kind}: refused by {target} ({type(exc).__name__})"
            fut = await self._dead_letter(
                record,
                tp,
                reason,
                keep_value=kind != "record-too-large",
                keep_timestamp=kind != "invalid-timestamp",
            )
            await fut
            self.metrics.dead_lettered.labels(**self._labels, topic=record.topic, reason=kind).inc()
            return
        # A restart would send the same records and be refused again: stop for good.
        raise FlowError(
            f"{s.name}: {s.target}/{target} refused the batch holding {where} ({exc!r}); no "
            "retry can fix this, so the flow stops before it; fix the target topic's config "
            "(or, for a single record, set on_error: dead-letter)",
            kind=kind,
            retriable=False,
        ) from exc

    @property
    def producer(self) -> AIOKafkaProducer:
        assert self._producer is not None
        return self._producer

    @property
    def consumer(self) -> AIOKafkaConsumer:
        assert self._consumer is not None
        return self._consumer

    def take_ready(self) -> dict[TopicPartition, int]:
        """The settled source offsets not yet made durable (and forget them)."""
        ready, self._ready = self._ready, {}
        return ready

    async def commit_to_source_group(self) -> None:
        if not self._ready or self._consumer is None:
            return
        assigned = self._consumer.assignment()
        offsets = {tp: o for tp, o in self._ready.items() if tp in assigned}
        self._ready.clear()
        if not offsets:
            return
        try:
            await self._consumer.commit(offsets)
        except (CommitFailedError, IllegalStateError) as exc:
            # A rebalance took the partitions away: the new owner re-copies from the last
            # commit (duplicates, never loss).
            self.log.warning("commit_failed_rebalance", error=str(exc))

    async def drain(self) -> None:
        """Wait until every fetched batch is settled and committed (before a rebalance, stop)."""
        join = asyncio.ensure_future(self._queue.join())
        waiters: set[asyncio.Future[Any]] = {join}
        if self._committer is not None:
            waiters.add(self._committer)
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not join.done():
            join.cancel()
            return
        if self.syncs is not None:  # the open runs, in the transaction in exactly-once mode
            await self._patiently(self.syncs.flush(), "offset syncs")
        await self.delivery.commit(self, final=True)

    async def _sync_loop(self, stop: asyncio.Event) -> None:
        assert self._topics is not None
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.topic_sync_interval_s)
            if stop.is_set():
                return
            try:
                await self._topics.sync()
                self.topic_sync_error = None
                if self.target_admin is not None:
                    self._limits.update(await target_limits(self.target_admin, self._limits))
            except Exception as exc:  # logged and counted: sync is best effort; copying goes on
                self.topic_sync_error = repr(exc)
                self.metrics.errors.labels(**self._labels, kind="topic-sync").inc()
                self.log.warning("topic_sync_failed", error=repr(exc), exc_info=exc)
