"""A failback report counts every record left behind, however slow the broker is (found by
test_failback_counts_no_heartbeat_among_the_records_left_behind failing at load 50): the count
stopped at the first fetch that answered empty, and the report said none were left."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import TopicPartition

from aa.failover.failback import _count_forwarded

pytestmark = pytest.mark.unit

TP = TopicPartition("orders", 0)


class SlowConsumer:
    """Answers empty twice (a broker too busy to answer within the poll), then the records."""

    def __init__(self, end: int) -> None:
        self.end, self.at, self.polls = end, 0, 0

    def assign(self, tps: list[TopicPartition]) -> None:
        return None

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.at = offset

    async def position(self, tp: TopicPartition) -> int:
        return self.at

    async def getmany(self, tp: TopicPartition, timeout_ms: int) -> dict[TopicPartition, list[Any]]:
        self.polls += 1
        if self.polls <= 2:
            return {}
        records = [type("R", (), {"offset": o})() for o in range(self.at, self.end)]
        self.at = self.end
        return {tp: records}


class EveryRecord:
    def route_batch(self, topic: str, partition: int, records: list[Any]) -> list[Any]:
        return [[r] for r in records]


async def test_an_empty_fetch_does_not_end_the_count() -> None:
    consumer = SlowConsumer(end=3)
    n = await _count_forwarded(consumer, EveryRecord(), TP, 0, 3)  # type: ignore[arg-type]
    assert n == 3
