"""Metadata v12's request and response (Kafka 2.8 and later), written with aiokafka's protocol
structs: aiokafka speaks Metadata up to v5, which has no topic ids. Imported only when topic ids
are asked for (:func:`aa.kafka.topic_ids.topic_ids`), so an aiokafka whose protocol structs
moved still lets aa start far enough to say so (:func:`aa.kafka.private.check`)."""

from __future__ import annotations

from io import BytesIO

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


class TopicIdsRequest(Request[_MetadataRequestV12]):  # type: ignore[misc]
    API_KEY = 3

    def __init__(self, topics: list[str], *, authorized_operations: bool = False) -> None:
        self._topics = topics
        self._operations = authorized_operations

    def build(self, request_struct_class: type[_MetadataRequestV12]) -> _MetadataRequestV12:
        zero = bytes(16)
        topics: list[tuple[bytes, str, dict[str, object]]] = [
            (zero, name, {}) for name in self._topics
        ]
        return request_struct_class(topics, False, self._operations, {})
