"""CreateTopics v4: topics created with the cluster's default replication factor.

A replication factor of -1 asks the broker for its ``default.replication.factor`` (KIP-464,
CreateTopics v4 and later; Kafka 2.4+, so 3.9 and 4.x). aiokafka speaks CreateTopics up to v3,
where brokers refuse -1; v4 has the same fields, so this module only adds the version.
"""

from __future__ import annotations

from typing import Any

from aiokafka.protocol.admin import CreateTopicsRequest_v3, CreateTopicsResponse_v3
from aiokafka.protocol.api import Request, RequestStruct, Response

BROKER_DEFAULT = -1
"""The replication factor that asks the broker for its own default (KIP-464)."""


class _CreateTopicsResponseV4(Response):  # type: ignore[misc]
    API_KEY = 19
    API_VERSION = 4
    SCHEMA = CreateTopicsResponse_v3.SCHEMA


class _CreateTopicsRequestV4(RequestStruct):  # type: ignore[misc]
    API_KEY = 19
    API_VERSION = 4
    RESPONSE_TYPE = _CreateTopicsResponseV4
    SCHEMA = CreateTopicsRequest_v3.SCHEMA


class CreateTopics(Request[_CreateTopicsRequestV4]):  # type: ignore[misc]
    """Create ``(name, partitions, replication factor, configs)``; answered per topic with
    ``topic_errors`` (``topic``, ``error_code``, ``error_message``), as aiokafka's v3."""

    API_KEY = 19

    def __init__(self, topics: list[tuple[str, int, int, dict[str, str]]], timeout_ms: int) -> None:
        self._topics = topics
        self._timeout_ms = timeout_ms

    def build(self, request_struct_class: type[_CreateTopicsRequestV4]) -> _CreateTopicsRequestV4:
        topics: list[Any] = [
            (name, partitions, rf, [], list(configs.items()))
            for name, partitions, rf, configs in self._topics
        ]
        return request_struct_class(topics, self._timeout_ms, False)
