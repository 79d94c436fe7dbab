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

from aa.offsets import writer
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
    # one sync per interval (the first anchored once: the run starts at offset 0), plus one
    # anchor per sync that crossed bucket boundaries (59 records before issue 29 item 7)
    assert first <= 2
    assert len(topic.sent) <= 2 * 4
    store = OffsetSyncStore("A", "B")
    store.extend(decode_sync(v) for v in records.values())
    store.ready = True
    for offset in (0, 99, 12_345, 299_999):
        assert store.translate("t", 0, offset).offset == offset


async def test_a_run_from_offset_0_writes_one_anchor_not_one_per_level() -> None:
    """Issue 29 item 7: the first sync of a run from offset 0 crosses every anchor level, and
    was written under all 40 anchor keys (40 records for a topic's first few copies). It is
    written once, under the highest level it crossed: the lower levels' keys would only hold
    the same sync, which the highest one keeps at least as long."""
    topic = SyncTopic()
    w = OffsetSyncWriter(topic, "syncs")
    tp = TopicPartition("t", 0)
    w.saw(tp, 0)
    await w.copied(tp, "t", [Rec(0), Rec(1)], 0)
    await w.flush()
    assert [k for k, _ in topic.sent] == [b"t/0/r0", f"t/0/x{ANCHOR_LEVELS - 1}.0".encode()]


async def test_commits_while_copying_write_a_partition_sync_once_per_interval() -> None:
    """A flow that keeps up commits whenever its queue empties (per record, at a trickle); each
    commit flushed the open runs, so every record cost a sync. While copying, only runs due
    (``flush_interval_s`` since their last write) are written; a final flush writes the rest."""
    now = [0.0]
    topic = SyncTopic()
    w = OffsetSyncWriter(topic, "syncs", flush_interval_s=1.0, clock=lambda: now[0])
    tp = TopicPartition("t", 0)
    w.saw(tp, 0)
    for i in range(31):  # 31 records 150 ms apart, a commit after each
        await w.copied(tp, "t", [Rec(i)], i)
        await w.flush(due_only=True)
        now[0] += 0.15
    ring = [k for k, _ in topic.sent if b"/r" in k]
    assert len(ring) <= 31 * 0.15 + 1, ring
    due = w.next_due()
    assert due is not None
    assert due <= now[0] + 1.0  # the tail is due within the interval
    await w.flush()
    assert w.next_due() is None
    store = OffsetSyncStore("A", "B")
    store.extend(decode_sync(v) for v in dict(topic.sent).values())
    store.ready = True
    assert store.translate("t", 0, 30).exactness == "exact"


@st.composite
def flushed_copies(draw: st.DrawFn) -> tuple[list[tuple[str, Any]], dict[int, list[int]], int]:
    """What a flow does to its writer: copies (restarts copy a range again, records skipped,
    other writers' records in between), commits while copying, final flushes, time passing."""
    syncs, landed, n = draw(copies_with_recopies())
    steps: list[tuple[str, Any]] = []
    for sync in syncs:
        steps.append(("copy", sync))
        steps.append((draw(st.sampled_from(["commit", "final", "none"])), draw(st.floats(0, 2))))
    return steps, landed, n


@settings(max_examples=100, deadline=None)
@given(flushed_copies())
async def test_syncs_written_and_compacted_never_translate_ahead(
    case: tuple[list[tuple[str, Any]], dict[int, list[int]], int],
) -> None:
    """The writer's syncs, as compaction leaves them (the last record per key, with a ring of 4
    and anchor buckets of 4 offsets so that both wrap), never translate an offset ahead."""
    steps, landed, n = case
    now = [0.0]
    topic = SyncTopic()
    w = OffsetSyncWriter(topic, "syncs", clock=lambda: now[0])
    tp = TopicPartition("t", 0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "RING", 4)
        mp.setattr(writer, "ANCHOR_SHIFT", 2)
        for kind, arg in steps:
            if kind == "copy":
                w.saw(tp, arg.covered_from)
                records = [Rec(o) for o in range(arg.source_first, arg.source_last + 1)]
                await w.copied(tp, "t", records, arg.target_first)
            else:
                now[0] += arg
                if kind != "none":
                    await w.flush(due_only=kind == "commit")
        await w.flush()
    store = OffsetSyncStore("A", "B", recent=4, older=6)
    store.extend(decode_sync(v) for v in dict(topic.sent).values())
    store.ready = True
    bound = [float("inf")] * (n + 3)
    for o in range(n - 1, -1, -1):
        bound[o] = min(bound[o + 1], max(landed[o])) if o in landed else bound[o + 1]
    for offset in range(n + 2):
        pos = store.translate("t", 0, offset)
        if pos.offset is not None:
            assert pos.offset <= bound[offset], (offset, pos, bound[offset])


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
