"""Source topic identity: Kafka's topic id (a UUID the controller gives each topic when it is
created), so that a topic deleted and created again under the same name is known as a new
one. Its offsets start at 0 again; a position stored for the old one means nothing in it.

aiokafka speaks Metadata up to v5, which has no topic ids (they came with v10). aa asks with
Metadata v12 (:mod:`aa.kafka.metadata_v12`; Kafka 2.8 and later, 3.9 and 4.x both answer it).
"""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka.admin import AIOKafkaAdminClient

from aa.kafka.requests import to_any_broker

ZERO_ID = "0" * 32
"""Kafka's "no topic id" (what a broker answers for a topic that does not exist)."""


async def topic_ids(admin: AIOKafkaAdminClient, topics: Iterable[str]) -> dict[str, str]:
    """The topic id (32 hex digits) of each of ``topics`` that exists, from ``admin`` (an
    aiokafka ``AIOKafkaAdminClient``, started; aa calls it as ``ClusterAdmin.topic_ids``).
    Topics that do not exist are left out."""
    names = sorted(set(topics))
    if not names:
        return {}
    from aa.kafka.metadata_v12 import TopicIdsRequest  # see its module doc

    response = await to_any_broker(admin, TopicIdsRequest(names))
    out = {}
    for t in response.to_object()["topics"]:
        tid = t["topic_id"].hex()
        if t["error_code"] == 0 and t["name"] is not None and tid != ZERO_ID:
            out[t["name"]] = tid
    return out
