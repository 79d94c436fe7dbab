"""A flow whose positions are gone (an at-least-once group deleted or expired, an exactly-once
positions topic lost) resumes from its offset syncs, only for the incarnation of the topic they
were written for: the syncs carry the topic's id."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
import structlog
from aiokafka import TopicPartition

from aa.mirror.delivery import AtLeastOnce, FlowClients
from aa.mirror.incarnations import Incarnations
from aa.offsets.resume import CopiedEnd, same_incarnation
from aa.offsets.store import OffsetSyncStore
from aa.offsets.sync import OffsetSync, decode_sync
from aa.offsets.writer import OffsetSyncWriter
from tests.helpers.mirror import sf_to_nyc

pytestmark = pytest.mark.unit

A0, B0 = TopicPartition("a", 0), TopicPartition("b", 0)


def test_a_sync_resumes_only_the_incarnation_of_its_topic_it_was_written_for() -> None:
    ends = {
        A0: CopiedEnd(150, "id-a"),  # the same incarnation
        B0: CopiedEnd(90, "id-b-old"),  # b was deleted and created again since
        TopicPartition("c", 0): CopiedEnd(40, None),  # written without an id
    }
    now = {"a": "id-a", "b": "id-b-new", "c": "id-c"}
    assert same_incarnation(ends, now, require_id=True) == {A0: 150}
    assert same_incarnation(ends, now, require_id=False) == {A0: 150, TopicPartition("c", 0): 40}


def test_the_topic_id_a_sync_is_written_with_is_read_back_with_its_end() -> None:
    store = OffsetSyncStore("SF", "NYC")
    old = OffsetSync("a", 0, "a", 0, 0, 99, 0)  # written by an aa before ids
    new = OffsetSync("a", 0, "a", 100, 100, 149, 100, "id-a")
    for sync in (old, new):
        assert decode_sync(sync.encode()) == sync
        store.add(decode_sync(sync.encode()))
    store.ready = True
    assert (store.copied_ends(), store.copied_end_ids()) == ({("a", 0): 150}, {("a", 0): "id-a"})


class Producer:
    def __init__(self) -> None:
        self.values: list[bytes] = []

    async def send(self, _topic: str, value: bytes, key: bytes, partition: Any = None) -> Any:
        self.values.append(value)
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


class SourceAdmin:
    def __init__(self, ids: dict[str, str]) -> None:
        self.ids, self.asked = ids, 0

    async def topic_ids(self, topics: Any) -> dict[str, str]:
        self.asked += 1
        return {t: self.ids[t] for t in topics if t in self.ids}


@dataclass(frozen=True)
class Rec:
    offset: int


async def test_an_at_least_once_flow_writes_its_syncs_with_the_id_of_the_topic_it_fetched() -> None:
    """The id is asked for once, when the topic is first fetched, before its copies' syncs."""
    producer, admin = Producer(), SourceAdmin({"a": "id-a"})
    writer = OffsetSyncWriter(producer, "syncs")  # type: ignore[arg-type]
    delivery = AtLeastOnce(sf_to_nyc("sf:9092", "nyc:9092", "g"))
    log: Any = structlog.get_logger()
    clients: Any = FlowClients(None, None, None, writer, log, admin)  # type: ignore[arg-type]
    delivery._clients, delivery._ids = clients, Incarnations(delivery._settings, admin)  # type: ignore[arg-type]
    writer.topic_ids = delivery._ids.known
    for first in (0, 10):
        batch = delivery.admit({A0: [Rec(o) for o in range(first, first + 10)]})
        await delivery.before_forward()
        await writer.copied(A0, "a", batch[A0], first)
        await writer.flush()
    assert admin.asked == 1
    assert {decode_sync(v).topic_id for v in producer.values} == {"id-a"}
