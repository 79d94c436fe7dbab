"""The settle stage: wait for a pending batch's sends, turn refusals into dead letters or a
stop, write offset syncs for what landed, and count copies once the delivery says they are
durable."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError, KafkaTimeoutError

from aa.mirror.context import StageContext
from aa.mirror.errors import FlowError, not_authorized, topic_not_authorized
from aa.mirror.limits import target_limits
from aa.mirror.pending import Copies, Pending, TopicRefusal, TopicsFailed
from aa.mirror.refusals import BROKER_REFUSALS
from aa.mirror.target import Target


class Settler:
    """Settles pendings in order; ``copied_total`` counts what was published as copied."""

    def __init__(self, ctx: StageContext, target: Target) -> None:
        self.ctx = ctx
        self.target = target
        self._uncounted: list[Copies] = []
        """Settled copies not counted yet (exactly-once: until their transaction commits),
        without their records (:class:`Copies`)."""
        self.copied_total = 0
        self._counters: dict[TopicPartition, tuple[Any, Any, Any, Any]] = {}
        """Per source partition, its four labelled counters: looking a child up by its labels
        costs ~2.5 µs, four per partition of every settled batch (~4% of a W3 flow's CPU)."""

    async def settle(self, pending: Pending) -> None:
        """Wait for every send of ``pending``; raises :class:`FlowError` when the flow must
        stop before a refused record (its offset is then never committed), and
        :class:`TopicsFailed` when the target refused a topic for good (see :meth:`_refused`),
        once every other send was settled."""
        futures = [f for f, _, _, _ in pending.sends]
        results = await asyncio.gather(*futures, return_exceptions=True)
        failed: dict[TopicPartition, TopicRefusal] = {}
        for (_, held, target, tp), result in zip(pending.sends, results, strict=True):
            if tp in failed:  # its later copies: no sync may translate past the refused one
                continue
            if isinstance(result, BaseException):
                if len(held) > 1:
                    await self._rescreen(held, tp, target, result)
                for record in held:
                    refusal = await self._refused(record, tp, target, result, alone=len(held) == 1)
                    if refusal is not None:
                        failed[tp] = refusal
                        break
            elif self.ctx.clients.syncs is not None and held:
                await self._write_syncs(held, tp, target, result)
        if failed:
            raise TopicsFailed(
                f"{self.ctx.settings.name}: "
                + "; ".join(f"{tp.topic} failed: {r.reason}" for tp, r in failed.items()),
                refusals=failed,
            )
        self._uncounted.append(pending.counts())
        if not self.ctx.delivery.transactional:
            self.publish_counts()

    def publish_counts(self) -> None:
        """Count the settled copies as replicated (exactly-once: once their transaction
        committed; see :meth:`discard_counts`)."""
        now = time.time()
        m, labels = self.ctx.metrics, self.ctx.labels
        hist, age = m.latency.labels(**labels), m.record_age.labels(**labels)
        for copies in self._uncounted:
            for ts in copies.timestamps:
                hist.observe(max(0.0, now - ts / 1000))
                age.observe(max(0.0, (copies.fetched_ms - ts) / 1000))
            for tp, n in copies.copied.items():
                if n:
                    nbytes = copies.bytes[tp]
                    counters = self._counters.get(tp)
                    if counters is None:
                        topic, part = tp.topic, str(tp.partition)
                        counters = self._counters[tp] = (
                            m.records.labels(**labels, topic=topic),
                            m.bytes.labels(**labels, topic=topic),
                            m.partition_records.labels(**labels, topic=topic, partition=part),
                            m.partition_bytes.labels(**labels, topic=topic, partition=part),
                        )
                    records, size, partition_records, partition_bytes = counters
                    records.inc(n)
                    size.inc(nbytes)
                    partition_records.inc(n)
                    partition_bytes.inc(nbytes)
                    self.copied_total += n
        self._uncounted.clear()

    def discard_counts(self) -> None:
        """The settled copies were aborted: they never count."""
        self._uncounted.clear()

    async def _write_syncs(
        self, held: list[Any], tp: TopicPartition, target: str, meta: Any
    ) -> None:
        """Offset syncs for a batch that kept its partition (not for dead letters or
        re-partitioned targets, which translation refuses)."""
        s, syncs = self.ctx.settings, self.ctx.clients.syncs
        assert syncs is not None
        if meta.partition != tp.partition or target != self.ctx.router.target_topic(tp.topic):
            return
        syncs_failed(self.ctx)
        waited = 0.0
        while True:
            try:
                await syncs.copied(tp, target, held, meta.offset)
            except KafkaTimeoutError as exc:  # the sync topic's buffer stayed full
                waited += s.request_timeout_ms / 1000
                self.target.waiting(syncs.topic, waited, exc)
            else:
                return

    async def _rescreen(
        self, held: list[Any], tp: TopicPartition, target: str, exc: BaseException
    ) -> None:
        """The target refused a batch of several records, so which one it refused is unknown.
        When the target's limits as read now refuse one of them (they changed since the flow
        read them; topic sync re-reads them only every interval), restart: the new flow screens
        each record against them and dead-letters it or stops before it, in order."""
        kind = BROKER_REFUSALS.get(type(exc))
        if kind is None or self.ctx.delivery.refusal(exc) is not None:
            return
        limits = (await target_limits(self.ctx.clients.target_admin, [target])).get(target)
        if limits is None:  # the topic is gone: the send's own error stops or restarts the flow
            return
        now_ms = int(time.time() * 1000)
        for record in held:
            refusal = limits.refusal(record, now_ms)
            if refusal is not None:
                s = self.ctx.settings
                raise FlowError(
                    f"{s.name}: {s.target}/{target} refused a batch of {len(held)} records "
                    f"({exc!r}); its limits changed since the flow read them "
                    f"({tp.topic}/{tp.partition}@{record.offset}: {refusal.detail}), so the "
                    "flow restarts and screens each record against them",
                    kind=kind,
                    retriable=True,
                ) from exc

    async def _refused(
        self, record: Any, tp: TopicPartition, target: str, exc: BaseException, *, alone: bool
    ) -> TopicRefusal | None:
        """The target refused a batch holding ``record`` of ``tp`` (``alone``: the only one):
        dead-letter it (``None``), or fail its topic from ``record`` on (the refusal), or raise
        what stops the flow (a refusal of the flow's own resources: its dead-letter topic, its
        transaction)."""
        s = self.ctx.settings
        where = f"{tp.topic}/{tp.partition}@{record.offset}"
        own = self.ctx.delivery.refusal(exc)
        if own is not None:
            raise own from exc
        if target != s.dead_letter_topic and (reason := topic_not_authorized(exc, s)):
            self.ctx.metrics.errors.labels(**self.ctx.labels, kind="not-authorized").inc()
            return TopicRefusal(record.offset, "not-authorized", f"{reason} (at {where})", target)
        if (denied := not_authorized(exc, s, "target")) is not None:
            raise denied from exc
        kind = BROKER_REFUSALS.get(type(exc))
        if kind is None:
            self.ctx.metrics.errors.labels(**self.ctx.labels, kind=type(exc).__name__).inc()
            raise FlowError(
                f"{s.name}: producing {where} to {s.target}/{target} failed: {exc!r}",
                kind=type(exc).__name__,
                retriable=True,
            ) from exc
        self.ctx.metrics.errors.labels(**self.ctx.labels, kind=kind).inc()
        if s.on_error == "dead-letter" and target != s.dead_letter_topic and alone:
            reason = f"{kind}: refused by {target} ({type(exc).__name__})"
            fut = await self.target.dead_letter(
                record,
                tp,
                reason,
                keep_value=kind != "record-too-large",
                keep_timestamp=kind != "invalid-timestamp",
            )
            try:
                await fut
            except KafkaError as dead:  # refused in turn: stops the flow, naming that topic
                await self._refused(record, tp, s.dead_letter_topic, dead, alone=True)
                raise
            self.ctx.metrics.dead_lettered.labels(
                **self.ctx.labels, topic=tp.topic, reason=kind
            ).inc()
            return None
        if target == s.dead_letter_topic:  # the flow's own: a restart is refused again
            raise FlowError(
                f"{s.name}: {s.target}/{target} refused the batch holding {where} ({exc!r}); no "
                "retry can fix this, so the flow stops before it; fix the dead-letter topic's "
                "config",
                kind=kind,
                retriable=False,
            ) from exc
        single = (
            ""
            if s.on_error == "dead-letter"
            else " (or, for a single record, set on_error: dead-letter)"
        )
        return TopicRefusal(
            record.offset,
            kind,
            f"{s.target}/{target} refused the batch holding {where} ({exc!r}); the topic stops "
            f"before it (the flow's other topics go on) and is tried again with backoff; fix "
            f"the target topic's config{single}: the topic resumes by itself, or on `aa resume`",
            target,
        )


def syncs_failed(ctx: StageContext) -> None:
    """Raise when an offset sync of the flow failed (an ACL's refusal among them is said as
    such by the flow): a lost sync stops the flow, idle or copying."""
    s, syncs = ctx.settings, ctx.clients.syncs
    if syncs is not None and syncs.failed:
        raise FlowError(
            f"{s.name}: writing offset syncs to {syncs.topic} in "
            f"{s.target} failed: {syncs.last_error!r}",
            kind="offset-sync",
            retriable=True,
        )
