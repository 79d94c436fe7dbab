"""Failover and failback drills on dedicated clusters that the test stops and restarts.

Two DCs, full mesh, headers mode. A consumer group reads half of `users` in SF; SF goes down;
`aa failover --translate` (checkpoints stored in NYC) and `aa failover --at TIME` move two
groups to NYC, where they resume with no record lost and no duplicate (the partition holds one
origin: translation is exact; the time lies between two phases with distinct timestamps).
Then NYC takes new writes, SF comes back, and `aa failback` reports the records SF had that
never reached NYC, waits for the NYC->SF resync and moves the group back: it reads exactly what
it had not seen — those SF-only records and NYC's new writes.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from aa.checkpoints.task import read_checkpoints
from aa.dev import cluster as devcluster
from aa.offsets.groups import group_offsets
from tests.conftest import launch_local_clusters
from tests.helpers.cli import aa_cli
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.processes import AaProcess, write_topology

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Past CreateTimes, within the brokers' 7-day retention: Kafka 4.x refuses records stamped more
# than an hour ahead (log.message.timestamp.after.max.ms), and the mirror keeps timestamps.
BASE_TS = int(time.time() * 1000) - 3 * 3_600_000
PHASE2_TS = BASE_TS + 3_600_000


def _recs(tag: str, n: int, ts: int) -> list[Rec]:
    return [
        Rec(f"k{i}".encode(), f"{tag}:{i}".encode(), partition=i % 2, timestamp_ms=ts + i)
        for i in range(n)
    ]


async def _consume_group(
    bootstrap: str, group: str, topic: str, *, timeout: float = 120.0
) -> list[Any]:
    """Read with ``group`` from its committed offsets to the end of each partition; commit.

    The end is the log end when reading starts (nothing is written meanwhile): "until nothing
    new for a while" once read 0 records, the group's coordinator not yet answering on a loaded
    machine while the reads came back empty."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    out: list[Any] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(2)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            assert time.monotonic() < deadline, f"{group} read {len(out)} records of {topic}"
            batch = await consumer.getmany(timeout_ms=500)
            out += [r for rs in batch.values() for r in rs]
        await consumer.commit()
    finally:
        await consumer.stop()
    return out


async def test_failover_and_failback_drill(
    tmp_path: Path, cluster_factory: Any, unique_name: Callable[[str], str]
) -> None:
    sf_c, nyc_c = cluster_factory("SF", "NYC")
    sf, nyc = sf_c.bootstrap, nyc_c.bootstrap
    topic = unique_name("users")
    g_translate, g_time, g_idle = unique_name("app"), unique_name("app-at"), unique_name("idle")
    config = write_topology(
        tmp_path / "t.yaml",
        {"SF": sf, "NYC": nyc},
        flows="full-mesh",
        topics=[re.escape(topic)],
        checkpoints={"enabled": True, "interval_s": 1},
    )
    cfg = str(config)
    for b in (sf, nyc):
        await create_topic(b, topic, partitions=2)
    await produce(sf, topic, _recs("p1", 1000, BASE_TS))
    run_nyc = AaProcess(
        ["run", "--config", cfg, "--dc", "NYC", "--metrics-port", "0"], tmp_path / "nyc.log"
    )
    run_sf = AaProcess(
        ["run", "--config", cfg, "--dc", "SF", "--metrics-port", "0"], tmp_path / "sf.log"
    )
    try:
        # the groups read half of users in SF (phase 1), then phase 2 is written
        seen_sf = await _consume_group(sf, g_translate, topic)
        seen_at = await _consume_group(sf, g_time, topic)
        assert len(seen_sf) == len(seen_at) == 1000
        await produce(sf, topic, _recs("p2", 1000, PHASE2_TS))
        await consume_all(nyc, topic, count=2000, timeout=90)
        committed_sf = await group_offsets({"bootstrap_servers": sf}, g_translate)

        # bad input while SF is up: a group that does not exist
        bad = await aa_cli(
            "offsets",
            "translate",
            "--config",
            cfg,
            "--group",
            "no-such-group",
            "--from",
            "SF",
            "--to",
            "NYC",
        )
        assert bad.code == 2, bad
        assert "no committed offsets in SF" in bad.err, bad
        live = await aa_cli(
            "offsets",
            "translate",
            "--config",
            cfg,
            "--group",
            g_translate,
            "--from",
            "SF",
            "--to",
            "NYC",
        )
        assert live.code == 0, live
        assert "exact" in live.out

        async def checkpointed() -> bool:
            state = await read_checkpoints("aa.checkpoints.SF.internal", {"bootstrap_servers": nyc})
            cps = {(c.topic, c.partition): c.upstream for c in state.for_group(g_translate)}
            return cps == {(tp.topic, tp.partition): o for tp, o in committed_sf.items()}

        await eventually(checkpointed, timeout=60, message="checkpoints of the group in NYC")
        # SF-only records: written while the SF->NYC flow is down, never copied before SF dies
        run_nyc.stop()
        await produce(sf, topic, _recs("orphan", 300, PHASE2_TS + 100_000))
        run_sf.stop()
        await asyncio.to_thread(devcluster.stop, sf_c)

        # failover --translate: dry run commits nothing, --execute moves the group
        dry = await aa_cli(
            "failover", "--config", cfg, "--group", g_translate, "--to", "NYC", "--translate"
        )
        assert dry.code == 0, dry
        assert "dry run" in dry.out
        assert await group_offsets({"bootstrap_servers": nyc}, g_translate) == {}
        done = await aa_cli(
            "failover",
            "--config",
            cfg,
            "--group",
            g_translate,
            "--to",
            "NYC",
            "--translate",
            "--execute",
        )
        assert done.code == 0, done
        resumed = await _consume_group(nyc, g_translate, topic)
        values = [r.value for r in resumed]
        assert sorted(values) == sorted(r.value for r in _recs("p2", 1000, 0)), (
            f"{len(values)} records after failover: lost or duplicated"
        )

        # failover --at: the time between phase 1 and phase 2 (timestamps survive the copy)
        at = await aa_cli(
            "failover",
            "--config",
            cfg,
            "--group",
            g_time,
            "--to",
            "NYC",
            "--at",
            str(PHASE2_TS - 1000),
            "--topic",
            topic,
            "--execute",
        )
        assert at.code == 0, at
        resumed_at = await _consume_group(nyc, g_time, topic)
        assert sorted(r.value for r in resumed_at) == sorted(values)

        # bad input: unknown group, a time before the retention start, an active group
        nope = await aa_cli(
            "failover",
            "--config",
            cfg,
            "--group",
            "no-such-group",
            "--to",
            "NYC",
            "--translate",
            "--execute",
        )
        assert nope.code == 2, nope
        assert "no checkpoints of group" in nope.err, nope
        admin = AIOKafkaAdminClient(bootstrap_servers=nyc)
        await admin.start()
        try:
            await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(10)})
        finally:
            await admin.close()
        early = await aa_cli(
            "failover",
            "--config",
            cfg,
            "--group",
            g_idle,
            "--to",
            "NYC",
            "--at",
            str(BASE_TS - 1),
            "--topic",
            topic,
            "--execute",
        )
        assert early.code == 2, early
        assert "before the retention start" in early.err, early
        active = AIOKafkaConsumer(bootstrap_servers=nyc, group_id=g_idle, enable_auto_commit=False)
        await active.start()
        try:
            active.subscribe([topic])
            await eventually(lambda: bool(active.assignment()), message="group active in NYC")
            busy = await aa_cli(
                "failover",
                "--config",
                cfg,
                "--group",
                g_idle,
                "--to",
                "NYC",
                "--at",
                str(PHASE2_TS),
                "--topic",
                topic,
                "--execute",
            )
        finally:
            await active.stop()
        assert busy.code == 2, busy
        assert "is active in NYC" in busy.err, busy
        assert await group_offsets({"bootstrap_servers": nyc}, g_idle) == {}

        # NYC takes new writes; SF comes back; only the NYC->SF resync runs for now
        await produce(nyc, topic, _recs("p3", 1000, PHASE2_TS + 200_000))
        await asyncio.to_thread(launch_local_clusters, [sf_c])
        run_sf = AaProcess(
            ["run", "--config", cfg, "--dc", "SF", "--metrics-port", "0"], tmp_path / "sf2.log"
        )
        await consume_all(sf, topic, count=3300, timeout=90)

        async def resynced() -> Any:
            r = await aa_cli("failback", "--config", cfg, "--group", g_translate, "--to", "SF")
            return r if "resync NYC->SF: complete" in r.out else None

        report = await eventually(resynced, timeout=60, interval=1, message="resync complete")
        assert report.code == 0, report
        orphans = re.findall(r"(\d+) records in \[", report.out)
        assert sum(int(n) for n in orphans) == 300, report.out
        back = await aa_cli(
            "failback", "--config", cfg, "--group", g_translate, "--to", "SF", "--execute"
        )
        assert back.code == 0, back
        after = await _consume_group(sf, g_translate, topic)
        expected = [r.value for r in _recs("orphan", 300, 0) + _recs("p3", 1000, 0)]
        assert sorted(r.value for r in after) == sorted(expected), (
            f"{len(after)} records after failback, expected the 300 SF-only and 1000 new"
        )
    finally:
        run_nyc.stop()
        run_sf.stop()
