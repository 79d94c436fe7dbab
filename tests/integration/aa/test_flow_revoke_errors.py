"""A drain that fails inside the rebalance listener (issue 13, item 2): aiokafka catches and only
logs what a listener raises, so the flow must record the error and stop with it itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from aa.mirror.delivery import AtLeastOnce
from aa.mirror.errors import FlowError
from aa.mirror.flow import MirrorFlow
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.mirror import OriginOnlyRouter, committed, exact, running_flow

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


class _TargetDownAtDrain(AtLeastOnce):
    """The final commit of a drain fails as it does when the target stays down during a
    revoke (the drain's offset-sync flush gives up after the delivery timeout)."""

    def __init__(self, settings: FlowSettings) -> None:
        super().__init__(settings)
        self.armed = False  # the first join revokes nothing and drains too: not that one
        self.failed = 0

    async def commit(self, *args: Any, final: bool, **kwargs: Any) -> Any:
        if final and self.armed:
            self.failed += 1
            raise FlowError("the target took nothing", kind="target-timeout", retriable=True)
        return await super().commit(*args, final=final, **kwargs)


async def test_drain_failing_during_revoke_stops_the_flow_with_its_error(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A second process joins; the first one's drain fails in the revoke. The first flow must
    stop with that error (so the supervisor restarts it), not go on as if the drain had worked,
    and its group must hold no commit past what reached the target."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("drainfail"), partitions=2)
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=i % 2) for i in range(100)])
    group = unique_name("g")
    settings = FlowSettings(
        "SF", "NYC", {"bootstrap_servers": sf}, {"bootstrap_servers": nyc}, group_id=group
    )
    router = OriginOnlyRouter("SF", "NYC", exact(topic))
    delivery = _TargetDownAtDrain(settings)
    first = MirrorFlow(settings, router, Metrics(), delivery=delivery)
    stop = asyncio.Event()
    task = asyncio.create_task(first.run(stop))
    try:
        await consume_all(nyc, topic, count=100, timeout=60)
        delivery.armed = True
        async with running_flow(settings, router):
            with pytest.raises(FlowError) as failed:
                await asyncio.wait_for(asyncio.shield(task), 90)
            assert failed.value.kind == "target-timeout"
            assert delivery.failed >= 1
    finally:
        stop.set()
        if not task.done():
            await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 60)
    # Everything committed was copied: the target holds at least the committed records.
    got = await consume_all(nyc, topic, count=100, timeout=60, settle=1.0)
    per_partition = {p: sum(1 for r in got if r.partition == p) for p in (0, 1)}
    for p, offset in (await committed(sf, group, topic, 2)).items():
        assert offset is None or offset <= per_partition[p], (p, offset, per_partition)
