"""Soak: do start-up and failover cost the same after weeks as after minutes?

Writes weeks of offset syncs and exactly-once offsets straight into the two internal topics
of one flow on a local broker (created by aa's own code, with aa's topic configs; syncs go
through the real ``OffsetSyncWriter``), and at growing ages measures, each in a fresh process:

* start-up: reading the stored exactly-once offsets (what ``aa run`` does before copying);
* failover: loading the flow's offset-sync store and translating every partition (what
  ``aa failover`` / ``aa offsets translate`` do);

with wall time, records read and peak RSS. The simulated deployment: ``--partitions``
source partitions, each with one transaction (one offsets record) and one run break (one
sync) every ``--every-s`` seconds: ``partitions * 86400 / every_s`` records per day per topic.

    .venv/bin/python -m bench.soak_offsets                       # starts its own broker
    .venv/bin/python -m bench.soak_offsets --bootstrap 127.0.0.1:9092 --ages 0.25,0.5,1,2

Not a test (it takes minutes); figures go to docs/benchmarks-history.md.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin
from aa.dev import cluster as devcluster
from aa.kafka.consumer import refresh_metadata
from aa.mirror.positions import OFFSETS_TOPIC_CONFIGS, StoredOffsets, offset_key
from aa.mirror.settings import FlowSettings
from aa.offsets.store import OffsetSyncStore
from aa.offsets.writer import SYNC_TOPIC_CONFIGS, OffsetSyncWriter, ensure_internal_topic

TOPIC = "orders"
BATCH = 10  # records copied per run


@dataclass(frozen=True, slots=True)
class Rec:
    offset: int


def _settings(bootstrap: str, flow: str) -> FlowSettings:
    client = {"bootstrap_servers": bootstrap}
    return FlowSettings(
        "SOAK",
        "DST",
        client,
        client,
        group_id=f"aa.soak.{flow}",
        offsets_topic=f"aa.offsets.soak-{flow}.internal",
        offset_sync_topic=f"aa.offset-syncs.soak-{flow}.internal",
    )


class _Batches:
    """Stands in for the producer the writer is given: records go into whole record batches
    (aiokafka's BatchBuilder), so that millions are written in minutes."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer
        self._open: dict[str, Any] = {}
        self._sent: list[asyncio.Future[Any]] = []

    async def send(self, topic: str, value: bytes, key: bytes) -> asyncio.Future[Any]:
        builder = self._open.get(topic)
        if builder is None:
            builder = self._open[topic] = self._producer.create_batch()
        if builder.append(timestamp=None, key=key, value=value, headers=[]) is None:
            await self._ship(topic)
            builder = self._open[topic] = self._producer.create_batch()
            builder.append(timestamp=None, key=key, value=value, headers=[])
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    async def _ship(self, topic: str) -> None:
        builder = self._open.pop(topic)
        self._sent.append(await self._producer.send_batch(builder, topic, partition=0))
        if len(self._sent) >= 32:
            await asyncio.gather(*self._sent)
            self._sent.clear()

    async def flush(self) -> None:
        for topic in list(self._open):
            await self._ship(topic)
        await asyncio.gather(*self._sent)
        self._sent.clear()


async def _write(bootstrap: str, flow: str, partitions: int, start: int, rounds: int) -> None:
    """``rounds`` commits of every partition: one run of BATCH copies (another DC's record
    between runs, so every run is a new sync) and one stored offset per partition."""
    s = _settings(bootstrap, flow)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=256 * 1024, acks=1)
    await producer.start()
    try:
        out = _Batches(producer)
        writer = OffsetSyncWriter(out, s.sync_topic)  # type: ignore[arg-type]  # batching stand-in
        for r in range(start, start + rounds):
            for p in range(partitions):
                tp = TopicPartition(TOPIC, p)
                first = r * BATCH
                records = [Rec(o) for o in range(first, first + BATCH)]
                writer.saw(tp, first)
                await writer.copied(tp, TOPIC, records, r * (BATCH + 1))
                value = orjson.dumps({"offset": first + BATCH, "ts": 0})
                await out.send(s.eos_offsets_topic, value, offset_key(tp))
            await writer.flush()
        await out.flush()
    finally:
        await producer.stop()


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _measure_startup(bootstrap: str, flow: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    async with StoredOffsets(_settings(bootstrap, flow)) as stored:
        offsets = await stored.refresh()
    return {
        "seconds": time.perf_counter() - t0,
        "records_read": stored.records_read,
        "partitions": len(offsets),
    }


async def _measure_failover(bootstrap: str, flow: str, partitions: int) -> dict[str, Any]:
    s = _settings(bootstrap, flow)
    t0 = time.perf_counter()
    store = await OffsetSyncStore("SOAK", "DST").load(s.sync_topic, s.target_client)
    kinds: dict[str, int] = {}
    end = (store.copied_end(TOPIC, 0) or 0) - 1
    for p in range(partitions):
        for offset in (end, end // 2, BATCH * 10):
            kind = store.translate(TOPIC, p, offset).exactness
            kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "seconds": time.perf_counter() - t0,
        "records_read": store.records_read,
        "syncs_in_memory": store.synced(),
        "answers": kinds,
    }


async def _topic_records(bootstrap: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    await asyncio.sleep(0)  # aiokafka's no-group task must run once before stop()
    try:
        await refresh_metadata(consumer)
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends = await consumer.end_offsets(tps)
        begins = await consumer.beginning_offsets(tps)
        return sum(ends[tp] - begins[tp] for tp in tps)
    finally:
        await consumer.stop()


def _child(kind: str, bootstrap: str, flow: str, partitions: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.soak_offsets",
            "measure",
            kind,
            bootstrap,
            flow,
            str(partitions),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def soak(bootstrap: str, partitions: int, ages: list[float], every_s: float) -> list[Any]:
    flow = uuid.uuid4().hex[:8]
    s = _settings(bootstrap, flow)
    async with ClusterAdmin("DST", bootstrap_servers=bootstrap) as admin:
        await ensure_internal_topic(admin, s.sync_topic, SYNC_TOPIC_CONFIGS)
        await ensure_internal_topic(admin, s.eos_offsets_topic, OFFSETS_TOPIC_CONFIGS)
    per_day = partitions * 86400 / every_s
    rows = []
    done = 0
    for millions in ages:
        rounds = int(millions * 1_000_000 / partitions)
        t0 = time.perf_counter()
        await _write(bootstrap, flow, partitions, done, rounds - done)
        write_s = time.perf_counter() - t0
        done = rounds
        written = done * partitions
        row = {
            "written_per_topic": written,
            "simulated_days": round(written / per_day, 1),
            "write_seconds": round(write_s, 1),
            "sync_topic_offsets_span": await _topic_records(bootstrap, s.sync_topic),
            "offsets_topic_offsets_span": await _topic_records(bootstrap, s.eos_offsets_topic),
            "startup": _child("startup", bootstrap, flow, partitions),
            "failover": _child("failover", bootstrap, flow, partitions),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _start_broker(root: Path) -> str:
    import socket

    socks = [socket.socket() for _ in range(2)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    port, cport = (sock.getsockname()[1] for sock in socks)
    for sock in socks:
        sock.close()
    spec = devcluster.DevCluster("SOAK", port, cport, root / "SOAK")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(devcluster.up, [spec], heap="512m").result()
    return spec.bootstrap


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "measure":
        kind, bootstrap, flow, partitions = argv[1], argv[2], argv[3], int(argv[4])
        if kind == "startup":
            result = asyncio.run(_measure_startup(bootstrap, flow))
        else:
            result = asyncio.run(_measure_failover(bootstrap, flow, partitions))
        result["seconds"] = round(result["seconds"], 3)
        result["max_rss_mb"] = round(_maxrss_mb(), 1)
        print(json.dumps(result))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", help="a running broker (default: start one)")
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--every-s", type=float, default=10.0, help="seconds between commits")
    ap.add_argument(
        "--ages", default="0.1,0.5,1,2", help="millions of records per topic at each measurement"
    )
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    ages = [float(a) for a in args.ages.split(",")]
    root = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        root = Path(tempfile.mkdtemp(prefix="aa-soak-"))
        bootstrap = _start_broker(root)
    try:
        rows = asyncio.run(soak(bootstrap, args.partitions, ages, args.every_s))
    finally:
        if root is not None:
            devcluster.down(root, wipe=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
