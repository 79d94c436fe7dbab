"""ClusterAdmin.topics reads a metadata response by field position, not through to_object."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.protocol.metadata import (
    MetadataResponse_v0,
    MetadataResponse_v1,
    MetadataResponse_v5,
)

from aa.admin import TopicInfo, topics_of

pytestmark = pytest.mark.unit

BROKER_V0 = (1, "localhost", 9092)
BROKER = (1, "localhost", 9092, None)


def _partitions(n: int, *, offline: bool) -> list[tuple[Any, ...]]:
    return [(0, p, 1, [1], [1], *([[]] if offline else [])) for p in range(n)]


def _from_to_object(response: Any) -> dict[str, TopicInfo]:
    """What aiokafka's describe_topics gives, turned into TopicInfo as before."""
    return {
        t["topic"]: TopicInfo(t["topic"], len(t["partitions"]), bool(t.get("is_internal")))
        for t in response.to_object()["topics"]
        if t["error_code"] == 0
    }


def test_topics_of_every_metadata_layout_matches_the_dict_conversion() -> None:
    v0 = MetadataResponse_v0(
        [BROKER_V0],
        [(0, "users", _partitions(3, offline=False)), (3, "gone", [])],
    )
    v1 = MetadataResponse_v1(
        [BROKER],
        1,
        [
            (0, "users", False, _partitions(3, offline=False)),
            (0, "__consumer_offsets", True, _partitions(50, offline=False)),
            (3, "gone", False, []),
        ],
    )
    v5 = MetadataResponse_v5(
        0,
        [BROKER],
        "cluster",
        1,
        [
            (0, "users", False, _partitions(4, offline=True)),
            (0, "__transaction_state", True, _partitions(50, offline=True)),
            (29, "denied", False, []),
        ],
    )
    for response in (v0, v1, v5):
        assert topics_of(response) == _from_to_object(response)
    assert topics_of(v5) == {
        "users": TopicInfo("users", 4, False),
        "__transaction_state": TopicInfo("__transaction_state", 50, True),
    }
