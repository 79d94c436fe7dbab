"""The exactly-once offsets topic after a month: the lag exporter reads it once and then only
what was written since (not the whole topic every 10 s), and the topic is configured so that
compaction keeps it to one record per partition plus a bounded head."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer

from aa import background
from aa.admin import ClusterAdmin
from aa.config import load_config
from aa.mirror.build import build_flows
from aa.mirror.positions import OFFSETS_TOPIC_CONFIGS
from aa.observe.metrics import Metrics
from aa.offsets.writer import ensure_internal_topic
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, create_topic, eventually, produce
from tests.helpers.processes import eos_topology

pytestmark = pytest.mark.integration


async def test_lag_exporter_reads_a_month_of_eos_offsets_once(
    tmp_path: Path,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("eosoff"), partitions=2)
    config, _ = eos_topology(tmp_path / "t.yaml", sf, nyc, topic)
    topology = load_config(config)
    [(settings, _)] = build_flows(topology, topology.flows)
    await produce(sf, topic, [Rec(b"k", b"v", partition=i % 2) for i in range(100)])
    # the offsets topic as an older aa created it (compacted, default segments)
    await create_topic(nyc, settings.eos_offsets_topic, config={"cleanup.policy": "compact"})
    # A month of transactions, compressed: 20,000 stored offsets, ending at 40 and 50.
    history = 20_000
    await produce(
        nyc,
        settings.eos_offsets_topic,
        [
            Rec(
                f"{topic}/{i % 2}".encode(),
                orjson.dumps({"offset": min(i // 2, 40 + 10 * (i % 2)), "ts": 0}),
            )
            for i in range(history)
        ],
        max_batch_size=512 * 1024,
    )

    # count what is fetched from the offsets topic (every refresh ends with an empty fetch
    # or a fetch of its newest records)
    read: dict[str, int] = {"records": 0, "calls": 0}
    original = AIOKafkaConsumer.getmany

    async def counting(self: AIOKafkaConsumer, *tps: Any, **kw: Any) -> Any:
        out = await original(self, *tps, **kw)
        for tp, records in out.items():
            if tp.topic == settings.eos_offsets_topic:
                read["records"] += len(records)
        return out

    original_ends = AIOKafkaConsumer.end_offsets

    async def ends(self: AIOKafkaConsumer, tps: Any) -> Any:
        if any(tp.topic == settings.eos_offsets_topic for tp in tps):
            read["calls"] += 1
        return await original_ends(self, tps)

    monkeypatch.setattr(AIOKafkaConsumer, "getmany", counting)
    monkeypatch.setattr(AIOKafkaConsumer, "end_offsets", ends)
    metrics = Metrics()
    stop = asyncio.Event()
    exporter = asyncio.create_task(
        background.export_lag(
            topology, [settings.name], metrics, stop, interval_s=0.05, read_timeout_s=300
        )
    )
    try:
        await eventually(lambda: read["calls"] >= 4, timeout=120, message="4 lag refreshes")
    finally:
        stop.set()
        await exporter
    labels = {"source": settings.source, "target": settings.target, "topic": topic}
    lag = [metrics.committed_lag.labels(**labels, partition=str(p))._value.get() for p in (0, 1)]
    assert lag == [10, 0]  # 50 per partition, copied up to 40 and 50
    print(f"{read['calls']} refreshes read {read['records']} offsets records")
    assert read["records"] <= history + 10  # the history once, then only what is new

    # and a flow's start gives the existing topic configs with which compaction keeps it
    # small (closed segments are what the cleaner compacts)
    # (a describe right after the alter may still answer the old configs: poll)
    async with ClusterAdmin(settings.target, bootstrap_servers=nyc) as admin:
        await ensure_internal_topic(admin, settings.eos_offsets_topic, OFFSETS_TOPIC_CONFIGS)

        async def bounded() -> dict[str, str | None]:
            configs = (await admin.topic_configs([settings.eos_offsets_topic]))[
                settings.eos_offsets_topic
            ]
            return {k: configs.get(k) for k in OFFSETS_TOPIC_CONFIGS}

        async def applied() -> bool:
            return await bounded() == OFFSETS_TOPIC_CONFIGS

        await eventually(applied, timeout=30, message="configs applied")
        configs = await bounded()
    assert "segment.ms" in OFFSETS_TOPIC_CONFIGS
    assert configs == OFFSETS_TOPIC_CONFIGS
