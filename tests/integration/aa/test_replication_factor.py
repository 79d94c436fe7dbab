"""Topics aa creates take the cluster's replication factor (issue 29 item 10).

aa asked for min(3, brokers listed at that moment): a topic created while a broker was down
stayed under-replicated for good, and the cluster's ``default.replication.factor`` was ignored.
Now a topic is created with replication factor -1 (KIP-464: the broker's default) unless the
topology sets ``topic_sync.replication_factor``. Runs on Kafka 3.9 too (``kafka39``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from aa.admin import AdminError, ClusterAdmin
from aa.config import read_yaml
from aa.dev import cluster as devcluster
from aa.mirror.build import build_flows
from tests.conftest import DcCluster, start_local_clusters
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.mirror import running_flow

pytestmark = pytest.mark.integration


async def _replicas(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """Each topic's replication factor (replicas of its partition 0)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    return {t["topic"]: len(t["partitions"][0]["replicas"]) for t in described}


async def test_created_topics_take_the_clusters_default_replication_factor(
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    nyc = dc_clusters["NYC"].bootstrap
    plain = unique_name("plain")
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:  # default 1: created
        assert await admin.create_topics([(plain, 1, {})]) == [plain]
    assert await _replicas(nyc, [plain]) == {plain: 1}
    root: Path = tmp_path_factory.mktemp("aa-rf")
    [rf] = start_local_clusters(("RF",), root, (("default.replication.factor", "2"),))
    try:
        # one broker whose default.replication.factor is 2: the cluster's default is asked for,
        # and the broker refuses it (before, aa asked for min(3, brokers) = 1: created, and
        # the cluster's default ignored)
        async with ClusterAdmin("RF", bootstrap_servers=rf.bootstrap) as admin:
            with pytest.raises(AdminError, match=r"default\.replication\.factor replicas") as info:
                await admin.create_topics([(unique_name("refused"), 1, {})])
        assert "set topic_sync.replication_factor" in str(info.value)  # the fix, by name
        # the topology sets one: the flow creates its target topic and offset-sync topic with it
        sf = dc_clusters["SF"].bootstrap
        topic = await create_topic(sf, unique_name("rf"))
        await produce(sf, topic, [Rec(b"k", b"v")])
        t = read_yaml(
            f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  RF: {{bootstrap: '{rf.bootstrap}'}}\n"
            f"topics: ['{topic}']\ntopic_sync: {{replication_factor: 1}}\n"
        )
        [(settings, router)] = build_flows(t, (t.flow("SF->RF"),))
        async with running_flow(settings, router):
            await consume_all(rf.bootstrap, topic, count=1, timeout=60)
        created = await _replicas(rf.bootstrap, [topic, settings.sync_topic])
        assert created == {topic: 1, settings.sync_topic: 1}
    finally:
        devcluster.down(root)
