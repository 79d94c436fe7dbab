"""The offset-sync writer's bookkeeping, driven the way a flow drives it, its syncs read back by
the store: a partition that comes back after a rebalance at a higher offset starts a new run
(it never claims the range another process copied)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
import structlog
from aiokafka import TopicPartition

from aa.mirror.fetch import RevokeListener
from aa.mirror.restamp import Held, RawBatch
from aa.offsets.store import OffsetSyncStore
from aa.offsets.sync import decode_sync
from aa.offsets.writer import OffsetSyncWriter

pytestmark = pytest.mark.unit


@dataclass(frozen=True, slots=True)
class Rec:
    topic: str
    partition: int
    offset: int


class SyncTopic:
    """The sync topic both processes write to, in write order, with who wrote what."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    def producer(self, name: str) -> Any:
        topic = self

        class Producer:
            async def send(
                self, _topic: str, value: bytes, key: bytes, partition: int | None = None
            ) -> asyncio.Future[Any]:
                return topic.write(name, value)

        return Producer()

    def write(self, name: str, value: bytes) -> asyncio.Future[Any]:
        self.sent.append((name, value))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


class FlowStub:
    """What the rebalance listener touches on a flow."""

    def __init__(self, writer: OffsetSyncWriter) -> None:
        self.syncs = writer
        self.drained = 0
        self.log = structlog.get_logger()
        self.delivery = self

    async def regained(self, tps: set[TopicPartition]) -> None:
        pass  # the delivery's resume after its own copies (aa.mirror.delivery)

    async def drain(self) -> None:
        self.drained += 1

    async def on_revoke(self, revoked: set[TopicPartition]) -> None:
        await self.drain()  # the flow's revoke: routing lock, then drain

    def on_assigned(self) -> None:
        pass  # the flow's fetch sizes follow the assignment (aa.mirror.memory)


def _recs(first: int, last: int) -> list[Rec]:
    return [Rec("t", 0, o) for o in range(first, last + 1)]


def _store(topic: SyncTopic, *writers: str) -> OffsetSyncStore:
    store = OffsetSyncStore("A", "B")
    for name, value in topic.sent:
        if name in writers:
            store.add(decode_sync(value))
    store.ready = True
    return store


async def _copy(w: OffsetSyncWriter, first: int, last: int, target: int) -> None:
    tp = TopicPartition("t", 0)
    w.saw(tp, first)
    await w.copied(tp, "t", _recs(first, last), target)
    await w.flush()


async def test_partition_back_after_rebalance_at_higher_offset_starts_a_new_run() -> None:
    tp = TopicPartition("t", 0)
    topic = SyncTopic()
    w = OffsetSyncWriter(topic.producer("mine"), "syncs")
    await _copy(w, 0, 2999, 0)  # this process copies 0..2999 to 0..2999
    listener = RevokeListener(FlowStub(w))  # type: ignore[arg-type]  # only drain() and syncs
    await listener.on_partitions_revoked({tp})
    # Another process copies 3000..4999 (to 3000..4999), then the partition comes back at 5000.
    await _copy(OffsetSyncWriter(topic.producer("theirs"), "syncs"), 3000, 4999, 3000)
    await listener.on_partitions_assigned({tp})
    await _copy(w, 5000, 5999, 5000)

    both = _store(topic, "mine", "theirs")
    pos = both.translate("t", 0, 3000)
    assert (pos.offset, pos.exactness) == (3000, "exact")
    # Without the other process's syncs, 3000..4999 are not known: never "the copy of 5000".
    alone = _store(topic, "mine").translate("t", 0, 3000)
    assert alone.offset is None or alone.offset <= 3000, alone
    assert alone.exactness != "exact"
    assert _store(topic, "mine").translate("t", 0, 5000).offset == 5000


async def test_batches_with_and_without_gaps_translate_exactly_on_both_sides() -> None:
    """A contiguous batch is one run (written without splitting it record by record); a batch
    with a gap (skipped or compacted records) is split at the gap. Both translate exactly."""
    tp = TopicPartition("t", 0)
    topic = SyncTopic()
    w = OffsetSyncWriter(topic.producer("mine"), "syncs")
    w.saw(tp, 0)
    await w.copied(tp, "t", _recs(0, 9), 100)  # contiguous: 0..9 -> 100..109
    await w.copied(tp, "t", [*_recs(10, 14), *_recs(30, 34)], 110)  # 15..29 skipped
    await w.flush()
    store = _store(topic, "mine")
    for source, target in ((5, 105), (12, 112), (30, 115), (34, 119)):
        pos = store.translate("t", 0, source)
        assert (pos.offset, pos.exactness) == (target, "exact"), (source, pos)


async def test_batch_path_copy_with_gaps_writes_syncs_without_decoding_its_batches() -> None:
    """Headers mode forwards the local batches of a source partition and skips the mirrored
    ones between them, so a target batch filled by the batch path holds raw batches with gaps
    between them. Its syncs come from the spans' offsets: the raw batches are never decoded
    (their bytes here are not even a batch) and both pieces translate exactly."""
    tp = TopicPartition("t", 0)
    topic = SyncTopic()
    w = OffsetSyncWriter(topic.producer("mine"), "syncs")
    w.saw(tp, 10)
    held = Held()
    held.add(RawBatch(b"not a batch", 10, 15, 0), 0, 5)  # 10..14
    held.add(RawBatch(b"not a batch", 30, 35, 0), 0, 5)  # 15..29 mirrored, skipped
    held.append(Rec("t", 0, 35))
    await w.copied(tp, "t", held, 200)
    await w.flush()
    store = _store(topic, "mine")
    for source, target in ((10, 200), (14, 204), (30, 205), (35, 210)):
        pos = store.translate("t", 0, source)
        assert (pos.offset, pos.exactness) == (target, "exact"), (source, pos)
