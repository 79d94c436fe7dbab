"""The hand-built CreateTopics v4 (aa/kafka/create_topics.py): aiokafka stops at v3, where a
broker refuses replication factor -1 (the cluster's default, KIP-464)."""

from __future__ import annotations

import pytest

from aa.kafka.create_topics import BROKER_DEFAULT, CreateTopics

pytestmark = pytest.mark.unit


def test_create_topics_goes_as_v4_with_the_brokers_default_replication_factor() -> None:
    request = CreateTopics([("t", 3, BROKER_DEFAULT, {"cleanup.policy": "compact"})], 30_000)
    struct = request.prepare({19: (2, 7)})  # Kafka 4.x answers v2..v7; 3.9 v0..v7
    assert struct.API_VERSION == 4
    [topic] = struct.to_object()["create_topic_requests"]
    assert (topic["topic"], topic["num_partitions"], topic["replication_factor"]) == ("t", 3, -1)
    assert topic["configs"] == [{"config_key": "cleanup.policy", "config_value": "compact"}]
    assert struct.encode()  # the v3 layout, which v4 shares
    with pytest.raises(NotImplementedError):
        request.prepare({19: (0, 3)})  # a broker older than Kafka 2.4 has no v4
