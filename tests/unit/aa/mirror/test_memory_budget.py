"""The shares of a flow's memory budget (:mod:`aa.mirror.memory`): what they let a flow hold
stays within ``tuning.memory_budget_mb``, and a flow across a WAN gets whole source batches
per round trip from it (docs/operations.md, memory; docs/benchmarks-history.md, W4)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import TopicPartition

from aa.config import read_yaml
from aa.errors import ConfigError
from aa.kafka.consumer import FetchSizes
from aa.mirror.build import build_flows, select_flows
from aa.mirror.memory import MIB, MemoryBudget, PartitionShare, whole_batches
from aa.mirror.restamp import RawBatch

SOURCE_BATCH = 512 * 1024 + 61
"""A full source batch of the bench (``batch_size`` 512 KiB) with its record-batch header."""


@pytest.mark.parametrize("budget_mb", [4, 8, 32, 64, 128, 1024])
@pytest.mark.parametrize("assigned", [1, 2, 6, 64, 1000])
@pytest.mark.parametrize(
    ("fetch_cap", "partition_cap"), [(64 * MIB, 4 * MIB), (16 * MIB, MIB), (1024, 1024)]
)
def test_what_the_budget_shares_let_a_flow_hold_stays_within_memory_budget_mb(
    budget_mb: int, assigned: int, fetch_cap: int, partition_cap: int
) -> None:
    """Every partition's fetch (in flight or unread), the response being parsed a second
    time, and the record bytes in flight twice: together at most the budget."""
    budget = MemoryBudget(budget_mb * MIB, fetch_cap, partition_cap)
    assert assigned * budget.partition_fetch_bytes(assigned) <= budget.fetched_bytes
    assert budget.fetch_max_bytes <= budget.fetched_bytes
    assert budget.worst_case(assigned) <= budget.total
    for behind in {1, 2, (assigned + 1) // 2, assigned}:  # one broker: split across these
        assert budget.worst_case(assigned, behind) <= budget.total


def test_a_six_partition_flow_fetches_two_512_kib_batches_per_partition_at_32_mib() -> None:
    """W4: at 32 MiB each partition's share held one 512 KiB batch and the head of the next
    (699,050 bytes), so a round trip brought 3 MiB of whole batches; two per partition
    double what a latency-bound flow moves per round trip, within the same budget."""
    budget = MemoryBudget(32 * MIB, 64 * MIB, 4 * MIB)
    assert budget.partition_fetch_bytes(6) >= 2 * SOURCE_BATCH
    assert budget.fetch_max_bytes >= 6 * 2 * SOURCE_BATCH


class _Fetcher:
    _max_partition_fetch_bytes = 0
    _fetch_min_bytes = 1

    def __init__(self, brokers: int) -> None:
        self.brokers = brokers
        self._in_flight: set[int] = set()

    def _select_read_replica(self, tp: TopicPartition) -> int:
        return tp.partition % self.brokers


class _Consumer:
    """What :class:`PartitionShare` reads of a consumer: its assignment, its fetcher (which
    broker each partition is read from), the end of each partition."""

    def __init__(self, partitions: int, brokers: int | None = None) -> None:
        self._fetcher = _Fetcher(brokers or partitions)
        self.partitions = {TopicPartition("t", p) for p in range(partitions)}
        self.ends: dict[TopicPartition, int] = {}

    def assignment(self) -> set[TopicPartition]:
        return self.partitions

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        return self.ends.get(tp)

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.ends.get(tp)


def _raw(size: int, offset: int = 0) -> RawBatch:
    return RawBatch(memoryview(bytes(size)), offset, offset + 1000, 0)


def test_a_partition_fetch_size_holds_whole_source_batches_once_their_size_is_seen() -> None:
    """Kafka fills a partition's fetch size with whole batches and the head of the next, which
    the consumer drops: at 32 MiB, 1,398,101 bytes per partition of 6 brought two 512 KiB
    batches and 349 KB fetched again next time. Once a fetch showed the batch size, the
    fetch size is whole batches (and no more than the share)."""
    budget = MemoryBudget(32 * MIB, 64 * MIB, 4 * MIB)
    consumer = _Consumer(6)
    share = PartitionShare(budget, consumer)
    share.follow()
    assert FetchSizes(consumer).partition_bytes == budget.partition_fetch_bytes(6)
    tp = TopicPartition("t", 0)
    share.observe({tp: [_raw(SOURCE_BATCH - 4000), _raw(SOURCE_BATCH, 1000)]})
    share.follow()
    assert FetchSizes(consumer).partition_bytes == 2 * SOURCE_BATCH


def _fetch_of(partitions: range, batches: int) -> dict[TopicPartition, list[RawBatch]]:
    """A fetch of ``batches`` whole source batches (1,000 records each) per partition."""
    return {
        TopicPartition("t", p): [_raw(SOURCE_BATCH, 1000 * n) for n in range(batches)]
        for p in partitions
    }


@pytest.mark.parametrize("brokers", [1, 2])
def test_partitions_that_caught_up_leave_their_share_of_a_round_trip_to_those_behind(
    brokers: int,
) -> None:
    """W4's last round trips: source partitions are never the same size, and once four of six
    reached their end, each fetch still gave every partition a sixth of the share, so it
    brought 2 x 5 batches where the share holds 30 (0.4-1.1 s of a 12 s copy). From one
    broker, the share is split across the partitions still behind (here up to the 4 MiB
    per-partition cap: 7 batches each); from several (one request each), it stays even."""
    budget = MemoryBudget(64 * MIB, 64 * MIB, 4 * MIB)
    consumer = _Consumer(6, brokers)
    share = PartitionShare(budget, consumer)
    consumer.ends = {TopicPartition("t", p): 100_000 for p in range(6)}
    share.observe(_fetch_of(range(6), 5))
    share.follow()
    assert FetchSizes(consumer).partition_bytes == 5 * SOURCE_BATCH
    consumer.ends.update({TopicPartition("t", p): 5000 for p in range(4)})  # 4 at their end
    share.observe(_fetch_of(range(6), 5))
    share.follow()
    expected = 7 * SOURCE_BATCH if brokers == 1 else 5 * SOURCE_BATCH
    assert FetchSizes(consumer).partition_bytes == expected
    if brokers == 1:  # in sum over the share: the one response is bounded by fetch_max_bytes
        assert 6 * expected > budget.fetched_bytes >= budget.fetch_max_bytes
        assert budget.worst_case(6, 2) <= budget.total
    share.observe({})  # nothing fetched (all caught up): even again
    share.follow()
    assert FetchSizes(consumer).partition_bytes == 5 * SOURCE_BATCH


def test_fetch_min_bytes_follows_the_partition_fetch_size_and_never_passes_it() -> None:
    """A fetch waits (up to ``fetch_max_wait_ms``) for ``fetch_min_bytes``; a lagging partition
    alone must fill it at once, so it is never above what one partition's fetch may bring."""
    budget = MemoryBudget(32 * MIB, 64 * MIB, 4 * MIB)
    few, many = _Consumer(6), _Consumer(200)
    PartitionShare(budget, few, 256 * 1024).follow()
    PartitionShare(budget, many, 256 * 1024).follow()
    assert FetchSizes(few).min_bytes == 256 * 1024  # 1.3 MiB per partition: the setting
    assert FetchSizes(many).min_bytes == budget.partition_fetch_bytes(200) < 256 * 1024


@pytest.mark.parametrize(
    ("size", "largest", "expected"),
    [(1000, 0, 1000), (1000, 3000, 1000), (7000, 3000, 6000), (6000, 3000, 6000)],
)
def test_whole_batches_rounds_down_never_below_one_batch(
    size: int, largest: int, expected: int
) -> None:
    assert whole_batches(size, largest) == expected


MESH = "datacenters: {SF: {bootstrap: 's:1'}, NYC: {bootstrap: 'n:1'}, LON: {bootstrap: 'l:1'}}\n"


def test_a_process_memory_budget_is_shared_by_the_flows_it_runs() -> None:
    """``tuning.memory_budget_mb`` bounds one process: a DC's two inbound flows get half each
    (what one flow had before it was per process), a process running one flow gets it all."""
    topology = read_yaml(MESH, "t.yaml")
    by_dc = build_flows(topology, select_flows(topology, dc="SF"))
    assert [s.memory_budget_mb for s, _ in by_dc] == [32, 32]
    [(one, _)] = build_flows(topology, select_flows(topology, flow="NYC->SF"))
    assert one.memory_budget_mb == 64
    small = read_yaml(MESH + "tuning: {memory_budget_mb: 9}\n", "t.yaml")
    assert [s.memory_budget_mb for s, _ in build_flows(small, small.inbound("SF"))] == [4, 4]


def test_a_process_budget_too_small_for_its_flows_names_the_setting_and_the_fix() -> None:
    topology = read_yaml(MESH + "tuning: {memory_budget_mb: 6}\n", "t.yaml")
    with pytest.raises(ConfigError) as err:
        build_flows(topology, select_flows(topology, dc="SF"))
    assert "tuning.memory_budget_mb: 6 MiB for the 2 flows" in str(err.value)
    assert "set at least 8" in str(err.value)


class _PrefetchingConsumer(_Consumer):
    """A consumer whose fetch task, like aiokafka's, sends the next request a few event-loop
    turns after ``getmany`` emptied its buffers: woken (one turn), it marks the broker in
    flight and starts the request's task (another), which writes the request (a third)."""

    def __init__(self) -> None:
        super().__init__(6, brokers=1)
        self.requests_sent = 0

    async def getmany(self, **_: Any) -> dict[TopicPartition, list[RawBatch]]:
        asyncio.get_running_loop().call_soon(self._wake_fetch_task)
        return _fetch_of(range(6), 5)

    def _wake_fetch_task(self) -> None:
        asyncio.get_running_loop().create_task(self._fetch_task())

    async def _fetch_task(self) -> None:
        self._fetcher._in_flight.add(0)
        await asyncio.create_task(self._send())

    async def _send(self) -> None:
        self.requests_sent += 1


async def test_the_next_fetch_leaves_before_the_flow_routes_what_it_took() -> None:
    """W4: routing a 16 MB fetch runs 13-16 ms without yielding, and the next request to the
    source waited for it every round trip; now it leaves first (0.4 ms after ``getmany``)."""
    from aa.mirror.fetch import Fetcher
    from aa.mirror.settings import FlowSettings
    from tests.helpers.mirror import stage_context

    consumer = _PrefetchingConsumer()
    settings = FlowSettings("A", "B", {"bootstrap_servers": "-"}, {"bootstrap_servers": "-"}, "g")
    share = PartitionShare(MemoryBudget(64 * MIB, 64 * MIB, 4 * MIB), consumer)
    fetcher = Fetcher(stage_context(settings, consumer=consumer), share=share)
    _, batch = await fetcher.next_batch()
    assert len(batch) == 6
    assert consumer.requests_sent == 1  # before routing starts: no await between here and it
