"""Exactly-once delivery on real brokers: copies and source offsets commit together on the
target; a restarted flow resumes from the offsets stored there; kill -9 of `aa run` every few
seconds during a stream leaves every record exactly once for a read_committed consumer."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from aiokafka import TopicPartition

from aa.mirror.positions import stored_offsets
from aa.tail import read_topic
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import eos_flow, running_flow
from tests.helpers.processes import AaProcess, eos_topology

pytestmark = pytest.mark.integration


async def test_eos_flow_resumes_from_offsets_stored_on_target(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    eos = await eos_flow(
        dc_clusters,
        unique_name,
        "eos",
        partitions=3,
        max_poll_records=300,
        commit_interval_s=0.2,
    )
    sf, nyc, topic, settings, router = eos.sf, eos.nyc, eos.topic, eos.settings, eos.router
    await produce(sf, topic, [Rec(b"k", f"{i}".encode(), partition=i % 3) for i in range(1500)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=1500, timeout=60, isolation_level="read_committed")
    stored, _ = await stored_offsets(settings)
    assert {tp.partition: o for tp, o in stored.items() if tp.topic == topic} == {
        0: 500,
        1: 500,
        2: 500,
    }
    # the source group was never used: resuming relies on the target's offsets alone
    await produce(
        sf, topic, [Rec(b"k", f"{i}".encode(), partition=i % 3) for i in range(1500, 2100)]
    )
    async with running_flow(settings, router):
        got = await consume_all(
            nyc, topic, count=2100, timeout=60, isolation_level="read_committed", settle=1.0
        )
    assert sorted(int(r.value) for r in got) == list(range(2100))


@pytest.mark.slow
async def test_kill9_every_few_seconds_exactly_once(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """60k records; `aa run` in exactly-once mode killed with SIGKILL every 1 to 2.5 s (at least
    6 times) and restarted; a read_committed consumer of the target sees each record exactly
    once. (The drills kill at random moments too; this one kills often, inside transactions.)"""
    total = 60_000
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("eos-kill"), partitions=4)
    _, args = eos_topology(
        tmp_path / "t.yaml", sf, nyc, topic,
        tuning={"commit_interval_s": 0.5, "max_poll_records": 2000},
    )  # fmt: skip

    async def write() -> None:
        step = 3_000
        for start in range(0, total, step):
            await asyncio.sleep(0.3)  # pacing: a stream that lasts across several kills
            await produce(
                sf,
                topic,
                [Rec(None, f"{i}".encode(), partition=i % 4) for i in range(start, start + step)],
                max_batch_size=256 * 1024,
            )

    writer = asyncio.create_task(write())
    kills = 0
    rng = random.Random(7)
    proc = AaProcess(args, tmp_path / "aa-0.log")
    try:
        while not writer.done() or kills < 6:
            await asyncio.sleep(rng.uniform(1.0, 2.5))
            proc.kill9()
            kills += 1
            proc = AaProcess(args, tmp_path / f"aa-{kills}.log")
        await writer
        got = await consume_all(
            nyc, topic, count=total, timeout=240, isolation_level="read_committed", settle=3.0
        )
    finally:
        proc.stop()
    counts = Counter(r.value for r in got)
    assert len(counts) == total, f"missing {total - len(counts)} after {kills} kills"
    dupes = {v: n for v, n in counts.items() if n > 1}
    assert not dupes, f"{len(dupes)} duplicated after {kills} kills, e.g. {list(dupes)[:5]}"
    assert kills >= 6
    # what read_uncommitted sees includes aborted copies: proof the kills hit transactions
    raw = await eventually(
        lambda: consume_all(nyc, topic, count=total, timeout=60, settle=1.0), timeout=90
    )
    print(f"kills={kills} read_uncommitted={len(raw)} read_committed={len(got)}")


async def test_restarted_eos_flow_never_moves_a_stored_offset_back(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """A restarted exactly-once flow re-reads its source from where the target's stored offsets
    say, and never stores an offset below one it stored before. (It fetched from the earliest
    offset and filtered what was copied; a fetch that returned only copied records committed
    the other partitions' fetch positions, still at 0, over their stored offsets: a kill -9 in
    that window copied those partitions again.)"""
    eos = await eos_flow(
        dc_clusters,
        unique_name,
        "eos-back",
        partitions=3,
        max_poll_records=10,
        commit_interval_s=0.001,
    )
    sf, nyc, topic, settings, router = eos.sf, eos.nyc, eos.topic, eos.settings, eos.router
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=i % 3) for i in range(300)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=300, timeout=60, isolation_level="read_committed")
    async with running_flow(settings, router) as (flow, _):

        async def at_end() -> bool:
            tps = [TopicPartition(topic, p) for p in range(3)]
            try:
                consumer = flow.consumer
            except AssertionError:  # not started yet
                return False
            if set(tps) - consumer.assignment():
                return False
            return all([await consumer.position(tp) >= 100 for tp in tps])

        await eventually(at_end, timeout=60)
    history: dict[int, list[int]] = {}
    for r in await read_topic(settings.eos_offsets_topic, settings.target_client):
        t, _, p = r.key.decode().rpartition("/")
        if t == topic:
            history.setdefault(int(p), []).append(int(orjson.loads(r.value)["offset"]))
    assert {p: max(h) for p, h in history.items()} == {0: 100, 1: 100, 2: 100}, history
    assert all(h == sorted(h) for h in history.values()), f"stored offsets moved back: {history}"
