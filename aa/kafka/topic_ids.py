"""Source topic identity: Kafka's topic id (a UUID the controller gives each topic when it is
created), so that a topic deleted and created again under the same name is known as a new
one. Its offsets start at 0 again; a position stored for the old one means nothing in it.

aiokafka speaks Metadata up to v5, which has no topic ids (they came with v10). This module
adds Metadata v12 (Kafka 2.8 and later; 3.9 and 4.x both answer it) for that one question.
"""

from __future__ import annotations

from collections.abc import Iterable
from io import BytesIO

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.abstract import AbstractType
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)

from aa.kafka.requests import to_any_broker

ZERO_ID = "0" * 32
"""Kafka's "no topic id" (what a broker answers for a topic that does not exist)."""


class _Uuid(AbstractType[bytes]):  # type: ignore[misc]
    @classmethod
    def encode(cls, value: bytes) -> bytes:
        return value

    @classmethod
    def decode(cls, data: BytesIO) -> bytes:
        value = data.read(16)
        if len(value) != 16:
            raise ValueError("Buffer underrun decoding a UUID")
        return value


class _MetadataResponseV12(Response):  # type: ignore[misc]
    API_KEY = 3
    API_VERSION = 12
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "brokers",
            CompactArray(
                ("node_id", Int32),
                ("host", CompactString("utf-8")),
                ("port", Int32),
                ("rack", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("cluster_id", CompactString("utf-8")),
        ("controller_id", Int32),
        (
            "topics",
            CompactArray(
                ("error_code", Int16),
                ("name", CompactString("utf-8")),
                ("topic_id", _Uuid),
                ("is_internal", Boolean),
                (
                    "partitions",
                    CompactArray(
                        ("error_code", Int16),
                        ("partition_index", Int32),
                        ("leader_id", Int32),
                        ("leader_epoch", Int32),
                        ("replica_nodes", CompactArray(Int32)),
                        ("isr_nodes", CompactArray(Int32)),
                        ("offline_replicas", CompactArray(Int32)),
                        ("tags", TaggedFields),
                    ),
                ),
                ("topic_authorized_operations", Int32),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class _MetadataRequestV12(RequestStruct):  # type: ignore[misc]
    API_KEY = 3
    API_VERSION = 12
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = _MetadataResponseV12
    SCHEMA = Schema(
        (
            "topics",
            CompactArray(
                ("topic_id", _Uuid),
                ("name", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("allow_auto_topic_creation", Boolean),
        ("include_topic_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


class _TopicIdsRequest(Request[_MetadataRequestV12]):  # type: ignore[misc]
    API_KEY = 3

    def __init__(self, topics: list[str]) -> None:
        self._topics = topics

    def build(self, request_struct_class: type[_MetadataRequestV12]) -> _MetadataRequestV12:
        zero = bytes(16)
        return request_struct_class([(zero, name, {}) for name in self._topics], False, False, {})


async def topic_ids(admin: AIOKafkaAdminClient, topics: Iterable[str]) -> dict[str, str]:
    """The topic id (32 hex digits) of each of ``topics`` that exists, from ``admin`` (an
    aiokafka ``AIOKafkaAdminClient``, started; aa calls it as ``ClusterAdmin.topic_ids``).
    Topics that do not exist are left out."""
    names = sorted(set(topics))
    if not names:
        return {}
    response = await to_any_broker(admin, _TopicIdsRequest(names))
    out = {}
    for t in response.to_object()["topics"]:
        tid = t["topic_id"].hex()
        if t["error_code"] == 0 and t["name"] is not None and tid != ZERO_ID:
            out[t["name"]] = tid
    return out
