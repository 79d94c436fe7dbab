"""A lagging flow holds no more fetched data than its memory budget allows, however large the
backlog: the consumer's fetch sizes are derived from ``tuning.memory_budget_mb`` and split
across the partitions the flow is assigned (issue 13 item 3; docs/operations.md, memory)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from aa.mirror.context import StageContext
from aa.mirror.flow import MirrorFlow
from aa.mirror.memory import MemoryBudget
from aa.mirror.settings import FlowSettings
from aa.mirror.target import Target
from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, create_topic, eventually, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, sf_to_nyc

pytestmark = pytest.mark.integration

PARTITIONS = 6
PRODUCER_BATCH = 16384
"""aiokafka's default ``max_batch_size``, which ``produce`` uses: Kafka returns a partition's
first batch whole even when it is larger than the partition's fetch size."""


class _HeldTarget(Target):
    """The fault: a target that takes nothing until the test lets it (the flow lags)."""

    release: asyncio.Event

    async def submit(
        self, builder: Any, topic: str, partition: int, lane: int = 0
    ) -> asyncio.Future[Any]:
        await self.release.wait()
        return await super().submit(builder, topic, partition, lane)


class _HeldFlow(MirrorFlow):
    def __init__(self, settings: FlowSettings, router: OriginOnlyRouter) -> None:
        super().__init__(settings, router, Metrics())
        self.release = asyncio.Event()

    def make_target(self, ctx: StageContext) -> Target:
        target = _HeldTarget(ctx)
        target.release = self.release
        return target


def _buffered(flow: MirrorFlow) -> tuple[int, int]:
    """(partitions with fetched data not yet read, bytes of it) in the flow's consumer."""
    results = flow.consumer._fetcher._records.values()
    held = [r._partition_records for r in results if getattr(r, "_partition_records", None)]
    return len(held), sum(p._records.size_in_bytes() for p in held)


async def test_lagging_flow_buffers_no_more_fetched_bytes_than_its_memory_budget(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """A 7.7 MB backlog in 6 partitions, a target that takes nothing: once the consumer holds
    fetched data for every partition, it holds at most the fetched-data share (1/4) of a 2 MiB
    budget (plus one whole producer batch per partition), not 6 x max_partition_fetch_bytes."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("memory"), partitions=PARTITIONS)
    value = b"m" * 512
    await produce(sf, topic, [Rec(None, value, partition=i % PARTITIONS) for i in range(15_000)])
    settings = sf_to_nyc(sf, nyc, unique_name("g"), offset_syncs=False, memory_budget_mb=2)
    flow = _HeldFlow(settings, OriginOnlyRouter("SF", "NYC", exact(topic)))
    stop = asyncio.Event()
    task = asyncio.create_task(flow.run(stop))
    try:
        await eventually(
            lambda: flow._fetcher is not None and _buffered(flow)[0] == PARTITIONS,
            timeout=90,
            message="fetched data buffered for every partition while the target holds",
        )
        _, held = _buffered(flow)
        budget = MemoryBudget.of(settings)
        allowed = budget.fetched_bytes + PARTITIONS * PRODUCER_BATCH
        assert held <= allowed, (
            f"a lagging flow buffers {held} fetched bytes (budget {budget.total})"
        )
    finally:
        flow.release.set()
        stop.set()
        await asyncio.wait_for(task, 60)
