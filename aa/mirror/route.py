"""The route stage: a fetched batch becomes whole record batches per target partition.

The per-record hot path is :meth:`Forwarder.forward`'s inner loop: the router's decision, the
target's limits, one ``append`` into the open batch of the record's target partition. A full
batch is submitted to the producer; nothing is sent record by record.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiokafka import TopicPartition

from aa.mirror.errors import FlowError
from aa.mirror.limits import headers_size
from aa.mirror.pending import Batch, Pending
from aa.mirror.placement import Placement
from aa.mirror.refusals import REFUSED
from aa.mirror.settings import FlowSettings
from aa.mirror.target import Target, appender, partition_for, seal
from aa.mirror.types import Malformed, Router, Skip
from aa.observe.metrics import Metrics
from aa.offsets.writer import OffsetSyncWriter
from aa.provenance import MIRRORED_AT


class Forwarder:
    """Routes fetched batches to the target; one per flow run."""

    def __init__(
        self,
        settings: FlowSettings,
        router: Router,
        placement: Placement,
        target: Target,
        syncs: OffsetSyncWriter | None,
        metrics: Metrics,
        set_lag: Callable[[TopicPartition, int], None],
    ) -> None:
        self.settings = settings
        self.router = router
        self.placement = placement
        self.target = target
        self.syncs = syncs
        self.metrics = metrics
        self.set_lag = set_lag
        self._labels = {"source": settings.source, "target": settings.target}

    async def forward(self, batch: Batch) -> Pending:
        """Route a fetched batch and submit it; the :class:`Pending` the commit stage settles."""
        pending = Pending()
        now_ms = int(time.time() * 1000)
        stamp = [(MIRRORED_AT, str(now_ms).encode())]
        skipped: Counter[tuple[str, str]] = Counter()
        for tp, records in batch.items():
            if self.syncs is not None:
                self.syncs.saw(tp, records[0].offset)
            target = await self.placement.target_topic(tp.topic)
            if target is None:
                skipped[(tp.topic, "not-routed")] += len(records)
                pending.offsets[tp] = records[-1].offset + 1
                continue
            parts, same_partition = await self.placement.place(tp, target)
            if not same_partition and self.syncs is not None:
                await self.syncs.repartitioned(tp, target, records)  # translation refuses
            limits = self.placement.limits.get(target)
            if limits is not None:
                cap, no_null_key, oldest, newest = limits.screen(now_ms)
            new_batch, mark = self.target.new_batch, self.target.mark
            open_batches: dict[int, tuple[Any, list[Any], Any]] = {}
            nbytes = forwarded = 0
            routes = self.router.route_batch(tp.topic, tp.partition, records)
            for r, route in zip(records, routes, strict=True):
                if type(route) is list:
                    ts, key, value = r.timestamp, r.key, r.value
                    size = (len(value) if value is not None else 0) + (
                        len(key) if key is not None else 0
                    )
                    refused = None
                    if limits is not None and (  # inline screen; refusal() decides and says why
                        size > cap
                        or (key is None and no_null_key)
                        or (ts != -1 and (ts < oldest or ts > newest))
                        or (r.headers and size + headers_size(r.headers) > cap)
                    ):
                        refused = limits.refusal(r, now_ms)
                    if refused is not None:
                        # The broker would refuse the whole batch holding it, and aiokafka's
                        # idempotent producer does not recover from that: refuse it here.
                        if await self._refuse(pending, tp, r, refused.kind, refused.detail):
                            break
                        continue
                    p = tp.partition if same_partition else partition_for(key, parts)
                    route.extend(stamp)  # the router's list is this record's own
                    slot = open_batches.get(p)
                    if slot is None:
                        builder = new_batch(limits)
                        slot = open_batches[p] = (builder, [], appender(builder))
                    held = slot[1]
                    n = len(held)
                    headers = route if n else route + mark  # a batch's first: see batches
                    if slot[2](n, ts, key, value, headers) is None:
                        await self._submit(slot, target, p, pending, tp)
                        builder = new_batch(limits)
                        slot = open_batches[p] = (builder, [], appender(builder))
                        held = slot[1]
                        # an empty batch takes any record; the size was checked above
                        slot[2](0, ts, key, value, route + mark)
                    held.append(r)
                    nbytes += size
                    forwarded += 1
                elif isinstance(route, Skip):
                    skipped[(tp.topic, route.reason)] += 1
                elif isinstance(route, Malformed) and await self._refuse(
                    pending, tp, r, "malformed-headers", route.error
                ):
                    break
            for p, slot in open_batches.items():
                if slot[1]:
                    await self._submit(slot, target, p, pending, tp)
            if pending.malformed is not None:
                break  # refused with on_error=fail: nothing after it in this batch
            pending.offsets[tp] = records[-1].offset + 1
            pending.copied[tp.topic] += forwarded
            pending.bytes[tp.topic] += nbytes
            pending.timestamps.append(records[-1].timestamp)
            self.set_lag(tp, records[-1].offset + 1)
        for (topic, reason), n in skipped.items():
            self.metrics.skipped.labels(**self._labels, topic=topic, reason=reason).inc(n)
        return pending

    async def _submit(
        self,
        slot: tuple[Any, list[Any], Any],
        target: str,
        partition: int,
        pending: Pending,
        source: TopicPartition,
    ) -> None:
        builder, held, _ = slot
        seal(builder, len(held))
        fut = await self.target.submit(builder, target, partition)
        pending.sends.append((fut, held, target, source))

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
        fut = await self.target.dead_letter(
            record,
            tp,
            f"{kind}: {detail}",
            keep_value=kind != "record-too-large",
            keep_timestamp=kind != "invalid-timestamp",
        )
        pending.sends.append((fut, [record], s.dead_letter_topic, tp))
        self.metrics.dead_lettered.labels(**self._labels, topic=tp.topic, reason=kind).inc()
        return False
