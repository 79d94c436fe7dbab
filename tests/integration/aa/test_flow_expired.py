"""Records the source deleted before the mirror copied them (the mirror was down longer than
the source's retention, or someone ran deleteRecords) cannot be copied; the flow says so,
naming the partition and the offsets, and counts them, instead of resuming silently at the new
log start (what MirrorMaker 2's consumer does with auto.offset.reset=earliest)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from structlog.testing import capture_logs

from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow, sf_to_nyc

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
async def test_records_expired_in_the_source_while_the_mirror_was_down_are_reported(
    delivery: str, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("expired"), partitions=2)
    settings = sf_to_nyc(sf, nyc, unique_name("g"), delivery=delivery, commit_interval_s=0.2)
    router = OriginOnlyRouter("SF", "NYC", exact(topic))
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=i % 2) for i in range(200)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=200, timeout=60, isolation_level="read_committed")
    # the mirror is down; SF writes on, and its retention deletes part of what was not copied
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=0) for i in range(200, 300)])
    admin = AIOKafkaAdminClient(bootstrap_servers=sf)
    await admin.start()
    try:
        await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(before_offset=150)})
    finally:
        await admin.close()
    metrics = Metrics()
    with capture_logs() as logs:
        async with running_flow(settings, router, metrics):
            await consume_all(nyc, topic, count=250, timeout=60, isolation_level="read_committed")
    expired = [e for e in logs if e["event"] == "records_expired_before_copy"]
    assert [(e["topic"], e["partition"], e["first"], e["next"]) for e in expired] == [
        (topic, 0, 100, 150)
    ], logs
    text = metrics.render().decode()
    assert f'aa_records_expired_total{{source="SF",target="NYC",topic="{topic}"}} 50.0' in text
