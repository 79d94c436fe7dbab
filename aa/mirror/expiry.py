"""Records the source deleted before the flow copied them.

When a flow resumes below a partition's log start (the mirror was down longer than the
source's retention, or someone ran ``deleteRecords``), Kafka has nothing to give for those
offsets and the consumer starts at the log start. Nothing can copy them any more; what aa can
do is say so: the first fetched batch of each partition after an assignment is compared with
where the delivery resumes it (the group's commit, or the stored exactly-once offset), and so
is a batch that starts past where the previous one ended (the log start overtook a lagging
flow and the consumer reset to it; at most once a minute per partition); a gap below the log
start is logged as ``records_expired_before_copy`` and counted in
``aa_records_expired_total``. Offset gaps above the log start (compaction, transaction markers)
are not expiry and are not reported.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from aa.deadlines import finished_within
from aa.mirror.context import StageContext
from aa.mirror.pending import Batch
from aa.mirror.restamp import next_offset

ASK_TIMEOUT_S = 10.0
"""How long the check waits for the offsets it asks for before it skips this time."""

JUMP_CHECK_INTERVAL_S = 60.0
"""At most one log-start check per partition this often for offset jumps while running: jumps
are common (a transaction marker per transaction of a transactional source; in headers mode the
mirror-written batches skipped unread), expiry is not urgent to name to the second."""


class ExpiryCheck:
    """Checks each partition's first fetched batch after an assignment, and the batches that
    start past where the previous one ended (rate-limited), against the log start."""

    def __init__(
        self,
        ctx: StageContext,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ctx = ctx
        self._clock = clock
        self._next: dict[TopicPartition, int] = {}
        """Per partition seen since the assignment, the offset after its last fetched batch."""
        self._asked: dict[TopicPartition, float] = {}

    def assigned(self) -> None:
        """A new assignment: its partitions resume from the delivery's offsets again."""
        self._next.clear()

    async def check(self, batch: Batch) -> None:
        ask: dict[TopicPartition, int | None] = {}
        now = self._clock()
        for tp, records in batch.items():
            if not records:
                continue
            seen = self._next.get(tp)
            if seen is None or (
                records[0].offset > seen
                and now - self._asked.get(tp, -JUMP_CHECK_INTERVAL_S) >= JUMP_CHECK_INTERVAL_S
            ):
                ask[tp] = seen
            self._next[tp] = next_offset(records)
        if ask:
            for tp, seen in ask.items():
                if seen is not None:  # a jump: the rate limit applies
                    self._asked[tp] = now
            await self._report(ask, batch)

    async def _offsets(
        self, tps: list[TopicPartition]
    ) -> tuple[dict[TopicPartition, int | None], dict[TopicPartition, int]]:
        resume = await self.ctx.delivery.resume_offsets(tps)
        return resume, await self.ctx.clients.consumer.beginning_offsets(tps)

    async def _report(self, before: dict[TopicPartition, int | None], batch: Batch) -> None:
        """``before``: per partition, where its previous batch ended (``None``: the first)."""
        tps = list(before)
        ask = asyncio.ensure_future(self._offsets(tps))
        if not await finished_within(ask, ASK_TIMEOUT_S):
            # a rebalance, a slow broker: advisory, never holds copying up
            self.ctx.clients.log.warning(
                "expiry_check_skipped", partitions=len(tps), error="no answer"
            )
            return
        if isinstance(ask.exception(), KafkaError):
            self.ctx.clients.log.warning(
                "expiry_check_skipped", partitions=len(tps), error=repr(ask.exception())
            )
            return
        resume, starts = ask.result()
        s = self.ctx.settings
        for tp, start in starts.items():
            # where this fetch should have started: the delivery's resume offset, or (a jump
            # while running) the end of the previous batch, whichever is further
            known = [o for o in (resume.get(tp), before[tp]) if o is not None]
            if not known:
                continue
            first = max(known)
            if start <= first or batch[tp][0].offset < start:
                continue
            self.ctx.metrics.expired.labels(**self.ctx.labels, topic=tp.topic).inc(start - first)
            self.ctx.clients.log.warning(
                "records_expired_before_copy",
                topic=tp.topic,
                partition=tp.partition,
                first=first,
                next=start,
                offsets=start - first,
                detail=(
                    f"{s.source} deleted offsets {first}..{start - 1} of {tp.topic}/"
                    f"{tp.partition} (retention or deleteRecords) before {s.name} copied them; "
                    f"copying resumes at {start}. Give the source topic a retention longer "
                    "than the longest mirror outage"
                ),
            )
