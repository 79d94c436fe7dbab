"""The route stage: a fetched batch becomes whole record batches per target partition.

The per-record hot path is :meth:`Forwarder.forward`'s inner loop: the router's decision, the
target's limits, one ``append`` into the open batch of the record's target partition. A full
batch is sealed; nothing is sent record by record. Once the fetch is routed, its sealed batches
go to the producer round-robin across target partitions (:meth:`Forwarder.forward`): aiokafka
queues one batch per partition and sends one request per broker at a time, so a partition's
batches handed over back to back waited a produce round trip each: W4's requests carried
1.4-1.5 batches on average, 5.7-6.1 round-robin (docs/benchmarks-history.md, "W4 traced per
request").
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from aiokafka import TopicPartition

from aa.kafka.producers import TargetBatch
from aa.kafka.records import Fetched, RawBatch, RawName, decoded
from aa.kafka.switch import MirrorRanges
from aa.mirror.context import StageContext
from aa.mirror.limits import SCREEN_SLACK, TargetLimits, headers_size
from aa.mirror.pending import Batch, Pending, TopicRefusal
from aa.mirror.placement import Placement
from aa.mirror.refusals import FIXES, REFUSED
from aa.mirror.restamp import (
    Held,
    Screen,
    Stamp,
    append,
    encode_header,
    encoded_stamp,
    expand,
    fetched_bytes,
    next_offset,
    record_count,
)
from aa.mirror.target import Target, partition_for
from aa.protocols import FetchedRecord, Malformed, SchemaIds, SchemaRefusal, Skip, Translate
from aa.provenance import MIRRORED_AT

_Skipped = Counter[tuple[str, str]]  # records not forwarded, per (source topic, reason)


class _Run:
    """One source partition's share of a fetched batch on its way through :class:`Forwarder`:
    where it goes, the target batches open per target partition, and what was forwarded."""

    __slots__ = (
        "codec", "forwarded", "lanes", "limits", "nbytes", "now_ms", "open", "parts", "target",
        "tp", "translate", "wide",
    )  # fmt: skip

    def __init__(self, tp: TopicPartition, target: str, parts: int | None, now_ms: int) -> None:
        self.tp, self.target, self.now_ms = tp, target, now_ms
        self.codec = 0  # of its target batches: Target.codec
        self.translate: Translate | None = None
        """The topic's schema-id translation: its records take the record path."""
        self.parts = parts
        """Partitions of a re-partitioned target (records go by key hash); ``None``: same."""
        self.limits: TargetLimits | None = None
        self.open: dict[int, TargetBatch] = {}
        """Per target partition, its open batch."""
        self.forwarded = self.nbytes = 0
        self.wide = False
        """Whether this fetch holds a full target batch or more of the partition: its batches
        may go through the partition's own producer lane (:meth:`Target.lane`)."""
        self.lanes: dict[int, int] = {}


class Forwarder:
    """Routes fetched batches to the target; one per flow run."""

    def __init__(
        self,
        ctx: StageContext,
        placement: Placement,
        target: Target,
        set_lag: Callable[[TopicPartition, int], None],
        believed: MirrorRanges | None = None,
    ) -> None:
        self.ctx, self.placement, self.target, self.set_lag = ctx, placement, target, set_lag
        self.believed = believed
        """Where mirror-written batches are: only there do ``aa-*`` headers count."""
        self._lanes = len(target.marks)  # one mark per producer
        self._marks = [b"".join(encode_header(k, v) for k, v in m) for m in target.marks]
        """Per producer, the ``aa-batch`` mark encoded, for the batch path."""
        self._stamps: dict[TopicPartition, Stamp] = {}
        self._sealed: dict[tuple[str, int], list[tuple[TargetBatch, TopicPartition]]] = {}
        """Per target partition, the batches sealed and not yet submitted, in order."""

    async def forward(self, batch: Batch) -> Pending:
        """Route a fetched batch and submit it; the :class:`Pending` the commit stage settles."""
        now_ms = int(time.time() * 1000)
        pending = Pending(fetched_ms=now_ms)
        skipped: _Skipped = Counter()
        syncs = self.ctx.clients.syncs
        for tp, records in batch.items():
            if syncs is not None:
                syncs.saw(tp, records[0].offset)
            target = await self.placement.target_topic(tp.topic)
            if target is None:
                skipped[(tp.topic, "not-routed")] += record_count(records)
                pending.offsets[tp] = next_offset(records)
                continue
            if self.placement.refuses(target):  # not created, for good: it fails
                self.placement.refused(pending, tp, records[0].offset, target)
                continue
            parts, same_partition = await self.placement.place(tp, target)
            schemas = self.ctx.schemas
            translate = schemas.translation(tp.topic) if schemas is not None else None
            if translate is not None:
                records = expand(records)  # the batch path would copy the ids untranslated
            if not same_partition:
                records = expand(records)  # the batch path keeps partitions
                if syncs is not None:
                    await syncs.repartitioned(tp, target, records)  # translation refuses
            run = _Run(tp, target, None if same_partition else parts, now_ms)
            run.limits = self.placement.limits.get(target)
            run.codec = self.target.codec(tp)
            run.translate = translate
            # only a flow with more than one producer chooses lanes (exactly-once has one): no
            # pass over the records for nothing
            run.wide = self._lanes > 1 and fetched_bytes(records) >= self.ctx.settings.batch_size
            if decoded(records):  # a raw batch may sit between two decoded ends: a pass
                await self._records(pending, run, records, skipped)
            else:
                await self._raw(pending, run, records, skipped)
            for p, slot in run.open.items():
                if slot.held:
                    self._seal(slot, target, p, tp)
            if pending.malformed is not None:
                break  # damaged: nothing after it in this batch
            if tp in pending.failed:  # refused with on_error=fail: its topic fails, not the flow
                pending.copied[tp] += run.forwarded
                pending.bytes[tp] += run.nbytes
                continue
            after = next_offset(records)
            if self.believed is not None:
                self.believed.release(tp, after)
            pending.offsets[tp] = after
            pending.copied[tp] += run.forwarded
            pending.bytes[tp] += run.nbytes
            pending.timestamps.append(records[-1].timestamp)
            self.set_lag(tp, after)
        await self._submit(pending)
        for (topic, reason), n in skipped.items():
            self.ctx.metrics.skipped.labels(**self.ctx.labels, topic=topic, reason=reason).inc(n)
        return pending

    async def _raw(
        self, pending: Pending, run: _Run, records: Sequence[Fetched], skipped: _Skipped
    ) -> None:
        """A fetched list holding :class:`RawBatch`\\ es: each through the batch path of
        :mod:`aa.mirror.restamp` when it takes it, the rest (decoded) through the record path."""
        tp = run.tp
        stamp = self._stamps.get(tp)
        if stamp is None:
            local = self.ctx.router.local_stamp(tp.topic, tp.partition)
            if local is not None:
                stamp = self._stamps[tp] = Stamp(local)
        if run.parts is not None:
            stamp = None  # re-partitioned: the record path
        screen = run.limits.screen(run.now_ms) if run.limits is not None else None
        post = encoded_stamp(run.now_ms)
        loose: list[FetchedRecord] = []  # decoded records waiting for the record path, in order
        for item in records:
            if not isinstance(item, RawBatch):
                loose.append(item)
                continue
            if stamp is not None:
                if loose:
                    if not await self._records(pending, run, loose, skipped):
                        return  # a refused record stopped the flow
                    loose = []
                if self._restamp(run, item, stamp, post, screen):
                    continue
            loose.extend(item.records())
        if loose:
            await self._records(pending, run, loose, skipped)

    def _restamp(self, run: _Run, raw: RawBatch, stamp: Stamp, post: bytes, screen: Screen) -> bool:
        """``raw`` re-encoded into the open batch of its partition (new batches as they fill);
        false (nothing written) when the batch path does not take it, or a record-path batch is
        open there."""
        p = run.tp.partition
        start = 0
        while True:
            slot = run.open.get(p)
            if slot is not None and not slot.raw and slot.held:
                # a record-path batch is open: records join it one by one until it is sent,
                # so target batches end where the record path alone would end them
                return False
            if slot is None or not slot.raw:
                builder = self.target.new_raw_batch(run.limits, run.codec)
                slot = run.open[p] = TargetBatch(builder, Held(), self._lane(run, p))
            held = slot.held
            got = append(
                slot.builder, raw, start, len(held), stamp, post, self._marks[slot.lane], screen
            )
            if got is None:
                raw.release()
                return False
            written, nbytes = got
            held.add(raw, start, start + written)
            run.forwarded += written
            run.nbytes += nbytes
            start += written
            if start >= raw.count:
                raw.release()
                self.ctx.metrics.batch_path.labels(**self.ctx.labels, topic=run.tp.topic).inc()
                return True
            self._seal(slot, run.target, p, run.tp)
            del run.open[p]

    async def _records(
        self, pending: Pending, run: _Run, records: Sequence[FetchedRecord], skipped: _Skipped
    ) -> bool:
        """The record path: each record routed, screened and appended; false when a refused
        record stops the flow (``on_error: fail``)."""
        tp, target, parts, limits, now_ms = run.tp, run.target, run.parts, run.limits, run.now_ms
        translate = run.translate
        if limits is not None:
            room, no_null_key, oldest, newest = limits.screen(now_ms)
            cap = room - SCREEN_SLACK  # under it a record fits whatever aa's headers add
        stamp = [(MIRRORED_AT, str(now_ms).encode())]
        new_batch, marks = self.target.new_batch, self.target.marks
        open_batches = run.open
        nbytes = forwarded = 0
        go_on = True
        believed = self.believed.believed(tp) if self.believed is not None else None
        routes = self.ctx.router.route_batch(tp.topic, tp.partition, records, believed)
        for r, route in zip(records, routes, strict=True):
            if type(route) is list:
                ts, key, value = r.timestamp, r.key, r.value
                if translate is not None:  # resolved before routing: known_schemas
                    done = translate(key, value)
                    if isinstance(done, SchemaRefusal):
                        if await self._refuse(pending, tp, r, done.kind, done.detail, target):
                            go_on = False
                            break
                        continue
                    key, value = done
                size = (len(value) if value is not None else 0) + (
                    len(key) if key is not None else 0
                )
                p = tp.partition if parts is None else partition_for(key, parts)
                route.extend(stamp)  # the router's list is this record's own
                if limits is not None and (  # inline screen; refusal() decides and says why
                    size > cap
                    or (key is None and no_null_key)
                    or (ts != -1 and (ts < oldest or ts > newest))
                    or (r.headers and size + headers_size(r.headers) > cap)
                ):
                    # exactly as written: alone in a batch, so with the batch mark too
                    written = route + marks[self._lane(run, p)]
                    refused = limits.refusal(r, now_ms, written)
                    if refused is not None:
                        # The broker would refuse the whole batch holding it, and aiokafka's
                        # idempotent producer does not recover from that: refuse it here.
                        if await self._refuse(pending, tp, r, refused.kind, refused.detail, target):
                            go_on = False
                            break
                        continue
                slot = open_batches.get(p)
                if slot is None:
                    builder = new_batch(limits, run.codec)
                    slot = open_batches[p] = TargetBatch(builder, [], self._lane(run, p))
                held = slot.held
                n = len(held)
                headers = route if n else route + marks[slot.lane]  # a batch's first: see batches
                try:
                    appended = slot.append(n, ts, key, value, headers)
                except TypeError:
                    slot = self._pure(run, p, headers)
                    held = slot.held
                    appended = slot.append(0, ts, key, value, route + marks[slot.lane])
                if appended is None:
                    self._seal(slot, target, p, tp)
                    builder = new_batch(limits, run.codec)
                    slot = open_batches[p] = TargetBatch(builder, [], slot.lane)
                    held = slot.held
                    # an empty batch takes any record; the size was checked above
                    slot.append(0, ts, key, value, route + marks[slot.lane])
                held.append(r)
                nbytes += size
                forwarded += 1
            elif isinstance(route, Skip):
                skipped[(tp.topic, route.reason)] += 1
            elif isinstance(route, Malformed) and await self._refuse(
                pending, tp, r, "malformed-headers", route.error, target
            ):
                go_on = False
                break
        run.forwarded += forwarded
        run.nbytes += nbytes
        return go_on

    def _pure(self, run: _Run, partition: int, headers: list[tuple[str, Any]]) -> TargetBatch:
        """A new batch for a record whose header name is not UTF-8 (:class:`RawName`): aiokafka's
        C builder takes ``str`` names only (``TypeError``), the pure-Python one writes its bytes.
        The batch open there, if any, is sealed first."""
        if not any(type(name) is RawName for name, _ in headers):
            raise TypeError(f"{run.tp}: a record's headers are not (str, bytes) pairs")
        slot = run.open.get(partition)
        if slot is not None and slot.held:
            self._seal(slot, run.target, partition, run.tp)
        builder = self.target.new_raw_batch(run.limits, run.codec)
        lane = slot.lane if slot is not None else self._lane(run, partition)
        slot = run.open[partition] = TargetBatch(builder, Held(), lane)
        return slot

    def _lane(self, run: _Run, partition: int) -> int:
        """The producer lane of the run's batches for target ``partition`` (one per run)."""
        lane = run.lanes.get(partition)
        if lane is None:
            lane = run.lanes[partition] = self.target.lane(run.target, partition, run.wide)
        return lane

    def _seal(self, slot: TargetBatch, target: str, partition: int, source: TopicPartition) -> None:
        """Close a full (or a run's last) batch; :meth:`_submit` hands it to the producer."""
        slot.seal()
        self._sealed.setdefault((target, partition), []).append((slot, source))

    async def _submit(self, pending: Pending) -> None:
        """Hand the sealed batches to the producer, in order per target partition and
        round-robin across them: every partition's first batch, then every second... so each
        produce request carries a batch of every partition (see the module doc)."""
        queues = list(self._sealed.items())
        self._sealed = {}
        for i in range(max((len(q) for _, q in queues), default=0)):
            for (target, partition), q in queues:
                if i < len(q):
                    slot, source = q[i]
                    fut = await self.target.submit(slot.builder, target, partition, slot.lane)
                    pending.sends.append((fut, slot.held, target, source))

    async def _refuse(
        self,
        pending: Pending,
        tp: TopicPartition,
        record: Any,
        kind: str,
        detail: str,
        target: str,
    ) -> bool:
        """A record the target must not get: dead-letter it, or (``on_error: fail``) stop its
        partition before it, and fail its topic (the flow goes on with the others). Returns
        whether the partition stops."""
        s = self.ctx.settings
        self.ctx.metrics.errors.labels(**self.ctx.labels, kind=kind).inc()
        if s.on_error == "fail":
            pending.offsets[tp] = record.offset  # commit up to, not past, the refused one
            what = REFUSED.get(kind, "a record the target refuses")
            where = f"{tp.topic}/{tp.partition}@{record.offset}"
            default_fix = (
                "no retry copies it (`aa resume` the topic once its writer is fixed), or"
                if kind == "malformed-headers"
                else f"fix the target topic {s.target}/{target} (the topic resumes by itself, "
                "or on `aa resume`), or"
            )
            fix = FIXES.get(kind, default_fix)
            pending.failed[tp] = TopicRefusal(
                record.offset,
                kind,
                f"{what} at {where}: {detail}; {fix} set on_error: dead-letter to route such "
                f"records to {s.dead_letter_topic}",
                target,
            )
            return True
        await self._submit(pending)  # the batches before it go first, as they were sealed
        fut = await self.target.dead_letter(
            record,
            tp,
            f"{kind}: {detail}",
            keep_value=kind != "record-too-large",
            keep_timestamp=kind != "invalid-timestamp",
        )
        pending.sends.append((fut, [record], s.dead_letter_topic, tp))
        self.ctx.metrics.dead_lettered.labels(**self.ctx.labels, topic=tp.topic, reason=kind).inc()
        return False


async def known_schemas(schemas: SchemaIds, batch: Batch, stop: asyncio.Event) -> bool:
    """Before ``batch`` is routed: the topics whose records carry schema ids are decoded (the
    batch path copies bytes as they are) and their ids made known (:mod:`aa.schemas`), so that
    routing translates each record synchronously. False when ``stop`` was set while a schema
    registry did not answer: the batch must not be routed."""
    parts = []
    for tp, records in batch.items():
        if schemas.translation(tp.topic) is not None:
            batch[tp] = decoded = expand(records)
            parts.append((tp.topic, decoded))
    return not parts or await schemas.resolve(parts, stop)
