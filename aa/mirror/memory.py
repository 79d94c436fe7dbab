"""One flow's memory budget (``tuning.memory_budget_mb``): what a flow may hold in fetched and
not yet acknowledged data, however far it lags.

A lagging flow holds as much as its clients let it: aiokafka buffers up to
``max_partition_fetch_bytes`` of fetched data per assigned partition (so it grows with the
partition count, not with ``fetch_max_bytes``), a fetch response is held two or three times
while it is read and decoded, and the records between fetch and acknowledgement are held with
their copy in a producer batch. The budget splits into fixed shares, so the sum stays under it:

- a fetch response: at most 1/8 (``fetch_max_bytes``, lowered to fit);
- fetched data not yet read: at most 1/8, split evenly across the assigned partitions (the
  per-partition fetch size follows the assignment; Kafka still returns a partition's first
  batch whole when it is larger);
- key and value bytes of records between fetch and acknowledgement: at most 1/4, held twice
  (the record and its copy in a batch); one fetched batch may go over it when nothing else
  is held, so a record larger than the share still moves.

The configured ``fetch_max_bytes`` and ``max_partition_fetch_bytes`` stay upper limits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aa.mirror.errors import aiokafka_part
from aa.mirror.settings import FlowSettings

MIB = 1024 * 1024
MIN_PARTITION_FETCH = 1024
"""The consumer's own lower limit (``tuning.max_partition_fetch_bytes`` ≥ 1024)."""


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """The shares of one flow's budget (see the module doc)."""

    total: int
    fetch_cap: int
    partition_cap: int

    @classmethod
    def of(cls, settings: FlowSettings) -> MemoryBudget:
        return cls(
            settings.memory_budget_mb * MIB,
            settings.fetch_max_bytes,
            settings.max_partition_fetch_bytes,
        )

    @property
    def fetch_max_bytes(self) -> int:
        return max(MIN_PARTITION_FETCH, min(self.fetch_cap, self.total // 8))

    @property
    def in_flight_bytes(self) -> int:
        return self.total // 4

    def partition_fetch_bytes(self, assigned: int) -> int:
        share = (self.total // 8) // max(1, assigned)
        return max(MIN_PARTITION_FETCH, min(self.partition_cap, share))


class PartitionShare:
    """Keeps the consumer's per-partition fetch size at the budget's share for the current
    assignment. aiokafka has no setter; its fetcher's attribute is set (checked at start: if a
    later aiokafka renames it, the flow refuses to start rather than buffer unbounded)."""

    def __init__(self, budget: MemoryBudget, consumer: Any) -> None:
        """``consumer`` is started (its fetcher exists), built with the per-partition size
        :data:`MIN_PARTITION_FETCH`: nothing fetched before the first :meth:`follow` passes the
        budget's share."""
        fetcher = aiokafka_part(
            consumer,
            "_fetcher._max_partition_fetch_bytes",
            "keep a flow within tuning.memory_budget_mb",
        )
        self._budget, self._consumer, self._fetcher = budget, consumer, fetcher
        self._assigned = -1

    def follow(self) -> None:
        """Adjust the per-partition size to the assignment (on assignment, and before each
        fetch for consumers without a group)."""
        assigned = len(self._consumer.assignment())
        if assigned != self._assigned:
            self._assigned = assigned
            self._fetcher._max_partition_fetch_bytes = self._budget.partition_fetch_bytes(assigned)


class InFlightBytes:
    """Record bytes between fetch and acknowledgement, bounded: :meth:`reserve` waits until
    the settled ones are released (the flow's byte backpressure, beside ``max_in_flight``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._released = asyncio.Condition()

    async def reserve(self, n: int) -> None:
        """Hold ``n`` more bytes; waits while that would pass the limit and anything is held."""
        async with self._released:
            await self._released.wait_for(lambda: self.held == 0 or self.held + n <= self.limit)
            self.held += n

    async def release(self, n: int) -> None:
        async with self._released:
            self.held -= n
            self._released.notify_all()
