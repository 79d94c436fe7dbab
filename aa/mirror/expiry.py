"""Records the source deleted before the flow copied them.

When a flow resumes below a partition's log start (the mirror was down longer than the
source's retention, or someone ran ``deleteRecords``), Kafka has nothing to give for those
offsets and the consumer starts at the log start. Nothing can copy them any more; what aa can
do is say so: the first fetched batch of each partition after an assignment is compared with
where the delivery resumes it (the group's commit, or the stored exactly-once offset), and a
gap below the log start is logged as ``records_expired_before_copy`` and counted in
``aa_records_expired_total``. Offset gaps above the log start (compaction, transaction
markers) are not expiry and are not reported.
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from aa.mirror.delivery import Delivery
from aa.mirror.pending import Batch
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics


class ExpiryCheck:
    """Checks each partition's first fetched batch after an assignment (one ListOffsets)."""

    def __init__(
        self,
        settings: FlowSettings,
        consumer: AIOKafkaConsumer,
        delivery: Delivery,
        metrics: Metrics,
        log: Any,
    ) -> None:
        self.settings = settings
        self.consumer = consumer
        self.delivery = delivery
        self.metrics = metrics
        self.log = log
        self._checked: set[TopicPartition] = set()

    def assigned(self) -> None:
        """A new assignment: its partitions resume from the delivery's offsets again."""
        self._checked.clear()

    async def check(self, batch: Batch) -> None:
        new = [tp for tp in batch if tp not in self._checked and batch[tp]]
        if not new:
            return
        self._checked.update(new)
        try:
            resume = await self.delivery.resume_offsets(new)
            behind = [tp for tp in new if resume.get(tp) is not None]
            starts = await self.consumer.beginning_offsets(behind) if behind else {}
        except KafkaError as exc:  # advisory: a rebalance or a slow broker never stops copying
            self.log.warning("expiry_check_skipped", partitions=len(new), error=repr(exc))
            return
        s = self.settings
        for tp, start in starts.items():
            first = resume[tp]
            assert first is not None
            if start <= first or batch[tp][0].offset < start:
                continue
            self.metrics.expired.labels(source=s.source, target=s.target, topic=tp.topic).inc(
                start - first
            )
            self.log.warning(
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
