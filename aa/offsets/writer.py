"""OffsetSyncWriter: turns settled produce batches into offset syncs and sends them to the sync
topic on the target, bounded by a semaphore (MM2's OffsetSyncWriter).

Unlike MM2 it never drops a sync when the bound is reached: it waits (backpressure on the
flow's commit loop), so every copied record stays translatable exactly. In exactly-once mode
the flow's producer is transactional and the syncs ride in the same transaction as the records
they describe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin
from aa.logs import get_logger
from aa.offsets.sync import runs

_log = get_logger("aa.offsets")
SYNC_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    # Keep a week of syncs uncompacted: translation stays exact for offsets copied in it.
    "min.compaction.lag.ms": str(7 * 24 * 3600 * 1000),
}


async def ensure_internal_topic(
    admin: ClusterAdmin, topic: str, configs: dict[str, str] | None = None
) -> None:
    """Create a one-partition compacted internal topic if missing."""
    await admin.create_topics([(topic, 1, configs or SYNC_TOPIC_CONFIGS)])


class OffsetSyncWriter:
    def __init__(self, producer: AIOKafkaProducer, topic: str, max_in_flight: int = 64) -> None:
        self._producer = producer
        self.topic = topic
        self._slots = asyncio.Semaphore(max_in_flight)
        self._from: dict[TopicPartition, int] = {}
        self.written = 0
        self.failed = 0
        self.last_error: BaseException | None = None
        """The broker's error behind the last failed sync (logged too; the flow names it)."""

    def saw(self, tp: TopicPartition, first_offset: int) -> None:
        """The flow fetched ``tp`` starting at ``first_offset`` (the first sync covers from it)."""
        self._from.setdefault(tp, first_offset)

    async def copied(
        self, tp: TopicPartition, target_topic: str, records: Sequence[Any], base: int
    ) -> None:
        """``records`` (in order) landed at ``target_topic``/``tp.partition`` from ``base``."""
        if not records:
            return
        offsets = [r.offset for r in records]
        covered = min(self._from.get(tp, offsets[0]), offsets[0])  # re-copies restart it
        for sync in runs(tp.topic, tp.partition, target_topic, offsets, base, covered):
            await self._slots.acquire()
            try:
                fut = await self._producer.send(self.topic, sync.encode(), sync.key())
            except BaseException:
                self._slots.release()
                raise
            fut.add_done_callback(self._done)
            self.written += 1
        self._from[tp] = offsets[-1] + 1

    def _done(self, fut: asyncio.Future[Any]) -> None:
        self._slots.release()
        if not fut.cancelled() and fut.exception() is not None:
            self.failed += 1  # the flow checks this when it settles (a lost sync is an error)
            self.last_error = fut.exception()
            _log.error("offset_sync_write_failed", topic=self.topic, error=repr(self.last_error))
