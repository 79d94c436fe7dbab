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

WRITE = 1 << 4
"""Kafka's ``AclOperation.WRITE`` (code 4) in a topic's authorized-operations bit field."""
NOT_ASKED = -(2**31)
"""The authorized operations a broker answers when it was not asked (or cannot say)."""
TOPIC_AUTHORIZATION_FAILED = 29


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


async def writable(admin: AIOKafkaAdminClient, topics: Iterable[str]) -> dict[str, bool]:
    """Whether the principal ``admin`` connects as may write each of ``topics``, as the broker's
    authorizer answers it (Metadata's topic authorized operations, KIP-430), without writing
    anything. A topic the broker says nothing certain of is left out."""
    names = sorted(set(topics))
    if not names:
        return {}
    from aa.kafka.metadata_v12 import TopicIdsRequest  # see its module doc

    response = await to_any_broker(admin, TopicIdsRequest(names, authorized_operations=True))
    out = {}
    for t in response.to_object()["topics"]:
        name, error, ops = t["name"], t["error_code"], t["topic_authorized_operations"]
        if name is None:
            continue
        if error == TOPIC_AUTHORIZATION_FAILED:  # may not even describe it
            out[name] = False
        elif error == 0 and ops != NOT_ASKED:
            out[name] = bool(ops & WRITE)
    return out
