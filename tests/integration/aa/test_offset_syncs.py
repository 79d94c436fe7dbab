"""Offset syncs measured on real brokers: a flow copies a partition in which every third record
came from another DC (skipped) through many small batches; for every source offset, translation
through the syncs the flow wrote equals the true position (read back from ``aa-src`` in the
target). The measured error is zero records, as the design bounds it."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from aa.mirror.settings import FlowSettings
from aa.offsets.store import OffsetSyncStore
from aa.provenance import SRC, LocalStamp
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow

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
    checked = 0
    for p in (0, 1):
        source_offsets = sorted(landed[p])
        for offset in range(source_offsets[-1] + 1):
            want = next(landed[p][o] for o in source_offsets if o >= offset)
            pos = store.translate(topic, p, offset)
            checked += 1
            assert pos.offset is not None, pos
            errors += abs(pos.offset - want)
    print(f"checked {checked} offsets, {written} syncs for {copies} copies, error {errors}")
    assert errors == 0
    assert written < copies  # one sync per contiguous run, not per record
