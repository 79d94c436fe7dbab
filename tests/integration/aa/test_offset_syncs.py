"""Offset syncs measured on real brokers: a flow copies a partition in which every third record
came from another DC (skipped) through many small batches; for every source offset, translation
through the syncs the flow wrote is never ahead of the true position (read back from ``aa-src``
in the target), and equals it for recent offsets (the newest runs a store keeps exactly; older
ones are thinned, so their translation is behind by a bounded number of records)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer

from aa.mirror.settings import FlowSettings
from aa.offsets.index import RECENT
from aa.offsets.store import OffsetSyncStore, Position
from aa.offsets.writer import FLUSH_INTERVAL_S
from aa.provenance import SRC, LocalStamp
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, delete_topic, eventually, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow, supervised

pytestmark = pytest.mark.integration


async def test_translation_of_every_offset_is_exact(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    topic = await create_topic(sf, unique_name("syncs"), partitions=2)
    n = 3000
    foreign = LocalStamp("LON", a, topic, 0)  # records that arrived from LON: never forwarded
    await produce(
        sf,
        topic,
        [
            Rec(b"k", f"{i}".encode(), foreign.headers(i, []) if i % 3 == 2 else [], i % 2)
            for i in range(n)
        ],
    )
    copies = n - n // 3
    settings = FlowSettings(
        a,
        b,
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nyc},
        group_id=unique_name("g"),
        max_poll_records=37,
        batch_size=2048,
    )
    async with running_flow(settings, OriginOnlyRouter(a, b, exact(topic))) as (flow, _):
        got = await consume_all(nyc, topic, count=copies, timeout=60, settle=0.5)
        assert flow.syncs is not None
        written = flow.syncs.written
    assert len(got) == copies
    landed: dict[int, dict[int, int]] = {0: {}, 1: {}}
    for r in got:
        src = dict(r.headers)[SRC].decode().rsplit("/", 1)[1]
        landed[r.partition][int(src)] = r.offset
    store = await OffsetSyncStore(a, b).load(settings.sync_topic, {"bootstrap_servers": nyc})
    errors = 0
    checked = ahead = 0
    recent_errors = 0
    for p in (0, 1):
        source_offsets = sorted(landed[p])
        recent_from = source_offsets[-RECENT]  # the newest RECENT runs hold at least these
        for offset in range(source_offsets[-1] + 1):
            want = next(landed[p][o] for o in source_offsets if o >= offset)
            pos = store.translate(topic, p, offset)
            checked += 1
            assert pos.offset is not None, pos
            ahead += pos.offset > want
            errors += want - pos.offset
            if offset >= recent_from:
                recent_errors += abs(pos.offset - want)
    print(
        f"checked {checked} offsets, {written} syncs for {copies} copies, "
        f"{store.synced()} syncs in memory; error {errors} records behind in total, "
        f"{recent_errors} for recent offsets"
    )
    assert ahead == 0  # never ahead: older offsets translate conservatively
    assert recent_errors == 0  # recent offsets translate exactly
    assert written < copies  # one sync per contiguous run, not per record


async def test_target_with_fewer_partitions_refuses_translation(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """The target topic has 2 partitions, the source 4: records go by key hash, and some land
    in the same-numbered partition by chance. No translation of those partitions may claim
    an exact (or any) position: a consumer starting there would miss the records hashed
    elsewhere."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    topic = await create_topic(sf, unique_name("fewer"), partitions=4)
    await create_topic(nyc, topic, partitions=2)
    # one local record per target partition: both have a leader before the flow produces
    await produce(nyc, topic, [Rec(b"local", b"v", [], p) for p in (0, 1)])
    n = 400
    await produce(sf, topic, [Rec(f"k{i}".encode(), b"v", [], i % 4) for i in range(n)])
    settings = FlowSettings(
        a,
        b,
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nyc},
        group_id=unique_name("g"),
        topic_sync=False,  # keep the target's 2 partitions
        max_poll_records=50,
    )
    async with running_flow(settings, OriginOnlyRouter(a, b, exact(topic))) as (_, task):
        try:
            got = await consume_all(nyc, topic, count=n + 2, timeout=60)
        finally:
            if task.done():
                raise AssertionError("the flow stopped") from task.exception()
    got = [r for r in got if r.key != b"local"]
    assert {r.partition for r in got} == {0, 1}
    # some records of source partition 0 landed in target partition 0 by their key's hash
    assert any(int(dict(r.headers)[SRC].split(b"/")[2]) == r.partition == 0 for r in got)
    store = await OffsetSyncStore(a, b).load(settings.sync_topic, {"bootstrap_servers": nyc})
    for p in range(4):
        for offset in (0, 10, 99, 100):
            pos = store.translate(topic, p, offset)
            assert pos.offset is None, (p, offset, pos)


async def test_target_topic_recreated_while_running_translates_no_offset_past_the_new_copies(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """The target topic was deleted while the flow ran; topic sync created it again and the
    flow copied on into it from target offset 0. The syncs of the first incarnation still map
    source 0..49 to target 0..49, which in the new topic hold the copies of source 50..99: a
    group at source 30 must not fail over to target 30 (30 records skipped). A later sync
    whose target offsets went back makes the store answer the new topic's start instead."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    topic = await create_topic(sf, unique_name("recreated-target"))
    await produce(sf, topic, [Rec(b"k", f"old{i}".encode()) for i in range(50)])
    settings = FlowSettings(
        a, b, {"bootstrap_servers": sf}, {"bootstrap_servers": nyc}, group_id=unique_name("g"),
        request_timeout_ms=5000, topic_sync_interval_s=1,
    )  # fmt: skip
    async with supervised(settings, OriginOnlyRouter(a, b, exact(topic))):
        await consume_all(nyc, topic, count=50, timeout=60)
        await delete_topic(nyc, topic)
        await produce(sf, topic, [Rec(b"k", f"new{i}".encode()) for i in range(50)])
        again = await consume_all(nyc, topic, count=50, timeout=90, settle=1.0)
    assert [r.value for r in again] == [f"new{i}".encode() for i in range(50)]
    store = await OffsetSyncStore(a, b).load(settings.sync_topic, {"bootstrap_servers": nyc})
    assert store.translate(topic, 0, 60) == Position(topic, 0, 10, "exact")
    old = store.translate(topic, 0, 30)  # its copy is gone: no answer past the new topic start
    assert old.offset is None or old.offset == 0, old


async def test_a_trickle_writes_syncs_per_flush_interval_not_per_commit(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """Issue 29 item 7: 31 records trickled 150 ms apart wrote 71 sync records (a commit, and a
    sync flush, every time the queue emptied, and 40 anchors at the start of a run from offset
    0). Syncs are bounded by what translation needs: at most one per partition per flush
    interval, one anchor where a run crosses bucket boundaries; the tail of a run is written
    within the interval while the flow idles; no translation is ever ahead."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    topic = await create_topic(sf, unique_name("trickle"))
    settings = FlowSettings(
        a, b, {"bootstrap_servers": sf}, {"bootstrap_servers": nyc}, group_id=unique_name("g"),
    )  # fmt: skip
    n = 31
    source = {"bootstrap_servers": nyc}

    async def tail_exact() -> bool:
        store = await OffsetSyncStore(a, b).load(settings.sync_topic, source)
        return store.translate(topic, 0, n - 1).exactness == "exact"

    producer = AIOKafkaProducer(bootstrap_servers=sf, linger_ms=0)
    await producer.start()
    async with running_flow(settings, OriginOnlyRouter(a, b, exact(topic))) as (flow, task):
        try:
            await producer.send_and_wait(topic, b"0", key=b"k")
            await consume_all(nyc, topic, count=1, timeout=60)  # the flow copies as it comes
            started = time.monotonic()
            for i in range(1, n):
                await producer.send_and_wait(topic, f"{i}".encode(), key=b"k")
                await asyncio.sleep(0.15)  # the trickle: a record every 150 ms
        finally:
            await producer.stop()
        got = await consume_all(nyc, topic, count=n, timeout=60)
        await eventually(tail_exact, timeout=30, message="the run's tail written while idle")
        elapsed = time.monotonic() - started
        assert flow.syncs is not None
        written = flow.syncs.written
        assert not task.done()
    print(f"{written} sync records for {n} records trickled over {elapsed:.1f} s")
    # the first record's sync and anchor, then one per flush interval (1 s) of the trickle
    # and of the idle tail
    assert written <= elapsed / FLUSH_INTERVAL_S + 3, written
    store = await OffsetSyncStore(a, b).load(settings.sync_topic, source)
    for r in got:
        pos = store.translate(topic, 0, int(r.value))
        assert pos.offset is not None
        assert pos.offset <= r.offset, (r.value, pos)  # never ahead
