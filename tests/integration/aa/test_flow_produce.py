"""How a flow hands its batches to the producer (issue 13, W1 against the ceiling)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow, sf_to_nyc

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


async def test_a_routed_batch_leaves_without_waiting_out_linger_ms(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A batch the flow hands over is complete (nothing is appended to it afterwards), so the
    producer must send it at once. aiokafka holds a batch ``linger_ms`` unless it is closed;
    the flow's batches were not, so every one of them waited out the linger (5 ms in the
    bench's W1, half of aa's copy time). With a linger of ten minutes the copies must still
    arrive well within the test's one-minute deadline. (Offset syncs are sent record by
    record through the producer's own batches, which linger as configured: off here.)"""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("linger"), partitions=2)
    await produce(sf, topic, [Rec(None, f"v{i}".encode(), partition=i % 2) for i in range(40)])
    settings = sf_to_nyc(sf, nyc, unique_name("g"), linger_ms=600_000, offset_syncs=False)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        got = await consume_all(nyc, topic, count=40, timeout=60)
    assert sorted(r.value for r in got) == sorted(f"v{i}".encode() for i in range(40))
