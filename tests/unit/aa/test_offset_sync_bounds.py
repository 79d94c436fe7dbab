"""Offset syncs stay bounded however long a flow runs: the writer writes only what translation
needs, a store's memory does not grow with the number of syncs it read, and old offsets still
translate safely (behind, never ahead) once they are thinned."""

from __future__ import annotations

import asyncio
import pickle
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from aa.offsets.store import OffsetSyncStore
from aa.offsets.sync import OffsetSync, decode_sync, runs
from aa.offsets.writer import ANCHOR_LEVELS, OffsetSyncWriter

pytestmark = pytest.mark.unit


@dataclass(frozen=True, slots=True)
class Rec:
    offset: int


class SyncTopic:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes, bytes]] = []
        self.partitions: list[int | None] = []

    async def send(
        self, topic: str, value: bytes, key: bytes, partition: int | None = None
    ) -> asyncio.Future[Any]:
        self.sent.append((key, value))
        self.partitions.append(partition)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def _month_of_syncs(n: int) -> list[OffsetSync]:
    """``n`` runs of 90 copies each, 10 skipped records between runs, other DCs' records
    interleaved in the target (every run is a new sync)."""
    return [OffsetSync("t", 0, "t", i * 100, i * 100 + 10, i * 100 + 99, i * 120) for i in range(n)]


def _store_bytes(syncs: list[OffsetSync]) -> int:
    """What the store retains, measured as its pickled size."""
    store = OffsetSyncStore("A", "B")
    store.extend(syncs)
    store.ready = True
    assert store.translate("t", 0, 50).offset is not None
    return len(pickle.dumps(store))


def test_store_memory_is_flat_after_ten_times_more_syncs() -> None:
    month = _month_of_syncs(100_000)
    small = _store_bytes(month[:10_000])
    large = _store_bytes(month)
    print(f"store after 10k syncs: {small} bytes; after 100k: {large} bytes")
    assert large < small * 1.5


@st.composite
def copies_with_recopies(draw: st.DrawFn) -> tuple[list[OffsetSync], dict[int, list[int]], int]:
    """A simulated at-least-once flow over one partition: runs of copies with skipped
    records, other writers' records in between, and restarts that copy a range again."""
    n = draw(st.integers(1, 300))
    # routing is a function of the record: a record skipped once is skipped on every copy
    routed = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    target = draw(st.integers(0, 50))
    landed: dict[int, list[int]] = {}
    syncs: list[OffsetSync] = []
    offset = covered = 0
    while offset < n:
        if draw(st.integers(0, 9)) == 0 and offset > 0:  # restart from an earlier offset
            offset = covered = draw(st.integers(max(0, offset - 30), offset))
        size = draw(st.integers(1, 12))
        batch = [o for o in range(offset, min(n, offset + size)) if routed[o]]
        if batch:
            syncs += runs("t", 0, "t", batch, target, covered)
            for j, o in enumerate(batch):
                landed.setdefault(o, []).append(target + j)
            covered = batch[-1] + 1
            target += len(batch) + draw(st.integers(0, 3))
        offset += size
    return syncs, landed, n


@settings(max_examples=100, deadline=None)
@given(copies_with_recopies())
def test_thinned_and_recopied_syncs_never_translate_ahead(
    case: tuple[list[OffsetSync], dict[int, list[int]], int],
) -> None:
    syncs, landed, n = case
    store = OffsetSyncStore("A", "B", recent=4, older=6)
    store.extend(syncs)
    store.ready = True
    assert store.synced() <= 2 * (4 + 6)
    # the latest copy of any record at or after each offset: a consumer starting at or
    # before it sees a copy of every such record
    bound = [float("inf")] * (n + 3)
    for o in range(n - 1, -1, -1):
        bound[o] = min(bound[o + 1], max(landed[o])) if o in landed else bound[o + 1]
    for offset in range(n + 2):
        pos = store.translate("t", 0, offset)
        if pos.offset is None:
            assert pos.exactness == ("before-syncs" if syncs else "gap")
            continue
        assert pos.offset <= bound[offset], (offset, pos, bound[offset])


async def test_contiguous_batches_write_one_sync_per_interval() -> None:
    now = [0.0]
    topic = SyncTopic()
    w = OffsetSyncWriter(topic, "syncs", flush_interval_s=1.0, clock=lambda: now[0])
    tp = TopicPartition("t", 0)
    w.saw(tp, 0)
    for i in range(1000):  # 1000 batches of 100 in one interval, landing contiguously
        await w.copied(tp, "t", [Rec(o) for o in range(i * 100, i * 100 + 100)], i * 100)
        now[0] += 0.0005
    first = len(topic.sent)
    for i in range(1000, 3000):  # two more intervals
        await w.copied(tp, "t", [Rec(o) for o in range(i * 100, i * 100 + 100)], i * 100)
        now[0] += 0.001
    await w.flush()
    records = dict(topic.sent)  # what compaction keeps
    print(f"{len(topic.sent)} sync records for 3000 batches, {len(records)} keys")
    # one sync per interval (the first anchored at every level: the run starts at offset 0),
    # plus the anchors of the bucket boundaries it crossed
    assert first <= 1 + ANCHOR_LEVELS
    assert len(topic.sent) <= 2 * ANCHOR_LEVELS
    store = OffsetSyncStore("A", "B")
    store.extend(decode_sync(v) for v in records.values())
    store.ready = True
    for offset in (0, 99, 12_345, 299_999):
        assert store.translate("t", 0, offset).offset == offset


@pytest.mark.parametrize(("partitions", "sent_to"), [(1, 0), (3, None), (None, None)])
async def test_syncs_go_to_the_only_partition_directly_and_by_key_hash_otherwise(
    partitions: int | None, sent_to: int | None
) -> None:
    """One partition (aa creates it so): partition 0, no key hash in the producer. More, or
    unknown: the producer's key hash, so each key stays in one partition for compaction."""
    topic = SyncTopic()
    writer = OffsetSyncWriter(topic, "aa.syncs", partitions=partitions)
    tp = TopicPartition("users", 0)
    await writer.copied(tp, "users", [Rec(0), Rec(1)], 0)
    await writer.copied(tp, "users", [Rec(5), Rec(6)], 2)
    await writer.flush()
    assert topic.partitions
    assert set(topic.partitions) == {sent_to}
