"""One flow's memory budget (``tuning.memory_budget_mb``): what a flow may hold in fetched and
not yet acknowledged data, however far it lags.

A lagging flow holds as much as its clients let it: aiokafka buffers up to
``max_partition_fetch_bytes`` of fetched data per assigned partition (so it grows with the
partition count, not with ``fetch_max_bytes``), a fetch response is held twice while it is
parsed (the bytes received and their copy per partition), and the records between fetch and
acknowledgement are held with their copy in a producer batch. The budget splits into fixed
shares, so the sum stays under it:

- fetched data, all partitions together: at most 1/4 (:attr:`MemoryBudget.fetched_bytes`),
  split evenly across the assigned partitions (the per-partition fetch size follows the
  assignment; Kafka still returns a partition's first batch whole when it is larger). One
  share covers both fetches in flight and data fetched and not yet read: aiokafka asks only
  for partitions with nothing buffered, so a partition is in one of the two, never both, and
  a response is at most the sum of its partitions' fetch sizes whatever the number of source
  brokers. ``fetch_max_bytes`` is lowered to the same share. Once the flow has seen its
  source batches (:meth:`PartitionShare.observe`), a partition's fetch size is rounded down
  to whole batches (:func:`whole_batches`): what Kafka adds past the last whole batch is
  dropped by the consumer and fetched again. When the source partitions are all read from one
  broker (one fetch request carries them all, and ``fetch_max_bytes`` bounds its response), the
  share is split across the partitions the last fetch left behind their end instead: a
  partition that caught up no longer holds a slice of each round trip it does not use
  (:meth:`PartitionShare.observe`; the response stays within ``fetch_max_bytes``, so the bound
  is the same);
- the response being parsed, held a second time for that moment: at most 1/4 again;
- key and value bytes of records between fetch and acknowledgement: at most 1/4, held twice
  (the fetched bytes and their copy in a batch), counted from the moment a fetch is taken
  from the consumer: the flow takes one only when this share has room for a whole fetch
  (:meth:`aa.mirror.commit.Committer.room_for_a_fetch`; until 2026-11-24 a fetch was taken and
  routed, its batches handed to the producer, and only then counted, so it sat beside an
  unacknowledged one that filled the share); one fetched batch may go over it when nothing
  else is held, so a record larger than the share still moves.

1/4 + 1/4 + 2 x 1/4 = the budget (:meth:`MemoryBudget.worst_case`). Until 2026-11-24 the
fetched data had two shares of 1/8 (responses, unread data) that counted the same bytes; a
flow across a WAN then moved at most budget/8 per round trip, one 512 KiB source batch per
partition at the default budget (docs/benchmarks-history.md, W4).

The configured ``fetch_max_bytes`` and ``max_partition_fetch_bytes`` stay upper limits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition

from aa.kafka.consumer import FetchSizes
from aa.kafka.records import RawBatch
from aa.mirror.restamp import next_offset
from aa.mirror.settings import FlowSettings

if TYPE_CHECKING:
    from aa.kafka.records import Polled

MIB = 1024 * 1024
MIN_PARTITION_FETCH = 1024
"""The consumer's own lower limit (``tuning.max_partition_fetch_bytes`` ≥ 1024)."""
NEXT_FETCH_TURNS = 8
"""Event-loop turns :meth:`PartitionShare.next_fetch_sent` waits at most: aiokafka's fetch
task takes three from the ``getmany`` that emptied its buffers to the request written."""


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
    def fetched_bytes(self) -> int:
        """Fetched data, in flight or not yet read, all partitions together."""
        return self.total // 4

    @property
    def fetch_max_bytes(self) -> int:
        return max(MIN_PARTITION_FETCH, min(self.fetch_cap, self.fetched_bytes))

    @property
    def in_flight_bytes(self) -> int:
        """Record bytes between fetch and acknowledgement (each held twice)."""
        return self.total // 4

    def partition_fetch_bytes(self, assigned: int) -> int:
        share = self.fetched_bytes // max(1, assigned)
        return max(MIN_PARTITION_FETCH, min(self.partition_cap, share))

    def worst_case(self, assigned: int, behind: int | None = None) -> int:
        """What the shares let a flow hold at once with ``assigned`` partitions (leaving out
        the whole first batch Kafka returns past a partition's fetch size): every partition's
        fetch, the response being parsed a second time, and the records in flight twice.
        ``behind``: the share split across that many partitions, all read from one broker,
        so in one request whose response ``fetch_max_bytes`` bounds."""
        fetched = max(1, assigned) * self.partition_fetch_bytes(behind or assigned)
        if behind is not None:
            fetched = min(fetched, self.fetch_max_bytes)
        return fetched + min(fetched, self.fetch_max_bytes) + 2 * self.in_flight_bytes


class PartitionShare:
    """Keeps the consumer's per-partition fetch size at the budget's share for the current
    assignment. aiokafka has no setter: :class:`aa.kafka.consumer.FetchSizes` sets its
    fetcher's (checked at start, :func:`aa.kafka.private.check`: if a later aiokafka renames
    it, the flow refuses to start rather than buffer unbounded)."""

    def __init__(self, budget: MemoryBudget, consumer: Any, min_bytes: int = 1) -> None:
        """``consumer`` is started (its fetcher exists), built with the per-partition size
        :data:`MIN_PARTITION_FETCH`: nothing fetched before the first :meth:`follow` passes the
        budget's share. ``min_bytes`` (``tuning.fetch_min_bytes``) follows too, never above
        the per-partition size: a lagging partition alone fills it at once, never waiting
        ``fetch_max_wait_ms`` for bytes its fetch size cannot hold."""
        self._budget, self._consumer, self._fetcher = budget, consumer, FetchSizes(consumer)
        self._min_bytes = min_bytes
        self._applied: tuple[int, int, int] | None = None
        self.largest = 0
        """The largest source batch handed out whole so far, in bytes (0: none yet)."""
        self.behind = 0
        """Partitions the last fetch left behind their end (0: none, or not known yet)."""

    def observe(self, batch: dict[TopicPartition, list[Polled]]) -> None:
        """Note what a fetch showed, then :meth:`follow` it before the next fetch is sent: the
        largest whole source batch (the last of each partition's list, when it came undecoded:
        :class:`~aa.kafka.records.RawBatch`), and how many partitions are still behind their
        end (the last stable offset, or the high watermark; unknown counts as behind)."""
        behind = 0
        for tp, records in batch.items():
            last = records[-1]
            if isinstance(last, RawBatch) and len(last.data) > self.largest:
                self.largest = len(last.data)
            end = self._consumer.last_stable_offset(tp)
            end = self._consumer.highwater(tp) if end is None else end
            if end is None or next_offset(records) < end:
                behind += 1
        self.behind = behind
        self.follow()

    def follow(self) -> None:
        """Adjust the per-partition size to the assignment (on assignment, and before each
        fetch), in whole source batches once their size is known (see :func:`whole_batches`);
        split across the partitions still behind when one broker serves them all (one request,
        its response bounded by ``fetch_max_bytes``: :meth:`MemoryBudget.worst_case`)."""
        assigned = self._consumer.assignment()
        split = len(assigned)
        if 0 < self.behind < split and self._one_broker(assigned):
            split = self.behind
        if (len(assigned), split, self.largest) != self._applied:
            self._applied = (len(assigned), split, self.largest)
            size = whole_batches(self._budget.partition_fetch_bytes(split), self.largest)
            self._fetcher.set(size, min(self._min_bytes, size))

    async def next_fetch_sent(self) -> None:
        """Give aiokafka's fetch task the event-loop turns to send its next request (with the
        size just set) before the flow routes what it took: routing a 16 MB fetch runs 13-16 ms
        without a yield, and the request waited for it every round trip (docs/benchmarks-history.md,
        W4). At most :data:`NEXT_FETCH_TURNS` turns: none is sent while a partition of the
        broker still has unread records, and then there is nothing to wait for."""
        after = 1  # the turn in which the request's task writes it, once the fetch task made it
        for _ in range(NEXT_FETCH_TURNS):
            if self._fetcher.in_flight():
                if after == 0:
                    return
                after -= 1
            await asyncio.sleep(0)

    def _one_broker(self, assigned: Any) -> bool:
        """Whether every assigned partition is fetched from the same, known broker (the one
        aiokafka's fetcher would send its request to now)."""
        nodes = {self._fetcher.broker_of(tp) for tp in assigned}
        return len(nodes) == 1 and nodes.pop() not in (None, -1)


def whole_batches(size: int, largest: int) -> int:
    """A partition's fetch size rounded down to whole batches of ``largest`` bytes (never
    below one). Kafka fills a partition's fetch size with whole batches and then the head of
    the next, which the consumer drops and fetches again: at the default budget, 699 KB per
    partition of 6 brought one 512 KiB batch and 175 KB for nothing per round trip."""
    if largest <= 0 or size < largest:
        return size
    return size // largest * largest


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

    async def room(self, n: int) -> None:
        """Wait until :meth:`reserve` of ``n`` bytes would not wait (nothing is held back)."""
        async with self._released:
            await self._released.wait_for(lambda: self.held == 0 or self.held + n <= self.limit)

    async def release(self, n: int) -> None:
        async with self._released:
            self.held -= n
            self._released.notify_all()
