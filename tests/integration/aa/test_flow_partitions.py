"""Partition, key, value, headers and CreateTime survive a copy; a target with fewer partitions
gets records by key hash (Kafka's default partitioner), so per-key order still holds."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce, wait_for_partitions
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow, sf_to_nyc

pytestmark = pytest.mark.integration

# Recent CreateTimes: the mirror keeps timestamps, and a broker's time-based retention deletes
# segments of records older than retention.ms (7 days here) within minutes of their copy.
T0 = int(time.time() * 1000) - 60_000


async def test_copy_preserves_partition_timestamp_headers(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(
        sf,
        unique_name("users"),
        partitions=3,
        config={"retention.ms": "604800000", "cleanup.policy": "delete"},
    )
    sent = [
        Rec(
            f"k{i % 7}".encode(),
            f"v{i}".encode(),
            [("app", str(i).encode())],
            partition=i % 3,
            timestamp_ms=T0 + i,
        )
        for i in range(3000)
    ]
    await produce(sf, topic, sent)
    settings = sf_to_nyc(sf, nyc, unique_name("g"), max_poll_records=500)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        got = await consume_all(nyc, topic, count=3000, timeout=60, settle=0.5)
    assert len(got) == 3000
    by_value = {r.value: r for r in got}
    for i, rec in enumerate(sent):
        copy = by_value[rec.value]
        assert copy.partition == rec.partition
        assert copy.timestamp == rec.timestamp_ms
        assert copy.key == rec.key
        headers = list(copy.headers)
        assert headers[0] == ("app", str(i).encode())
        assert dict(headers)["aa-src"].startswith(f"SF/{topic}/{rec.partition}/".encode())
    # order inside each partition is the source order
    for p in range(3):
        values = [r.value for r in sorted(got, key=lambda r: r.offset) if r.partition == p]
        assert values == [r.value for r in sent if r.partition == p]


async def test_fewer_target_partitions_go_by_key_hash(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"), partitions=4)
    await create_topic(nyc, topic, partitions=2)
    sent = [Rec(f"key-{i % 11}".encode(), f"{i}".encode(), partition=i % 4) for i in range(400)]
    await produce(sf, topic, sent)
    settings = sf_to_nyc(sf, nyc, unique_name("g"), topic_sync=False)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        got = await consume_all(nyc, topic, count=400, timeout=60)
    partitions_of_key: dict[bytes, set[int]] = {}
    for r in got:
        partitions_of_key.setdefault(r.key, set()).add(r.partition)
    assert all(len(ps) == 1 for ps in partitions_of_key.values())
    assert {p for ps in partitions_of_key.values() for p in ps} <= {0, 1}


async def test_topic_sync_copies_configs_and_grows_partitions(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    from aa.admin import ClusterAdmin

    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(
        sf,
        unique_name("cfg"),
        partitions=2,
        config={"retention.ms": "3600000", "min.insync.replicas": "1"},
    )
    await create_topic(nyc, topic, partitions=1, config={"retention.ms": "1000"})
    settings = sf_to_nyc(sf, nyc, unique_name("g"))
    await produce(sf, topic, [Rec(b"k", b"v", partition=1)])
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        # the record keeps partition 1, which the flow's topic sync adds: read it once there
        # (consume_all reads the partitions it finds at its start, which raced the sync)
        await wait_for_partitions(nyc, topic, 2)
        await consume_all(nyc, topic, count=1, timeout=60)
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        assert (await admin.topics())[topic].partitions == 2
        cfg = (await admin.topic_configs([topic]))[topic]
    assert cfg["retention.ms"] == "3600000"
    assert "min.insync.replicas" not in cfg  # excluded, like MM2's defaults
