"""Convergence under faults (marker ``drill``): three DCs in a full mesh, exactly-once, each DC's
application writing concurrent conflicting events (conflict's ``EventWriter``, the same keys
everywhere) while mirror processes are SIGKILLed and restarted and a broker is bounced. After
quiescence every DC holds every event once, folds them to the same state (identical digests),
and `aa reconcile` finds nothing missing, duplicated, looped or divergent.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.cli.main import main as aa_main
from conflict import Materializer
from conflict.envelope import Event
from conflict.writer import EventWriter
from tests.conftest import DrillSize
from tests.helpers import drill
from tests.helpers.kafka import create_topic, eventually
from tests.helpers.processes import AaProcess, write_topology

pytestmark = [pytest.mark.integration, pytest.mark.drill, pytest.mark.spark, pytest.mark.slow]

DCS = ("SF", "NYC", "LON")
KEYS = 20


async def _write_events(
    dc: str,
    bootstrap: str,
    topic: str,
    n: int,
    seconds: float,
    running: asyncio.Event,
    outage_s: float,
) -> int:
    """``n`` conflicting writes: every DC sets the same KEYS keys, interleaved in time.

    Writes still unacknowledged when the DC's broker stops wait for it like an application
    that rides out the outage: the producer's request timeout outlasts the outage and a slow
    restart. (With aiokafka's default of 40 s, a batch without a leader for that long fails
    with LeaderNotAvailableError: what the drill first failed with on a loaded machine.)"""
    rng = random.Random(f"{dc}-{topic}")
    patience_ms = int((outage_s + 180) * 1000)
    async with EventWriter(
        dc, topic, bootstrap_servers=bootstrap, request_timeout_ms=patience_ms
    ) as writer:
        for i in range(n):
            await running.wait()  # this DC's broker is being bounced: its apps wait
            key = f"user-{rng.randrange(KEYS)}"
            await writer.write(key, "set", {"by": dc, "i": i}, wait=False)
            if i % 50 == 49:
                await writer.flush()
                await asyncio.sleep(seconds * 50 / n)  # pacing the load, not synchronising
    return n


def _lag_read_failures(s: drill.Sample | None) -> float:
    return 0.0 if s is None else s.lag_read_failures()


async def _read_events(bootstrap: str, topic: str) -> list[Event]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        # a consumer without a subscription has no metadata of our topic: ask for it (else
        # ``partitions_for_topic`` may answer None and nothing would be read)
        parts = await consumer._client._wait_on_metadata(topic)
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_beginning()
        end = await consumer.end_offsets(tps)
        out: list[Event] = []
        deadline = time.monotonic() + 120
        # (not `any(await ... for tp in tps)`: that is an async generator, which any() refuses)
        while [tp for tp in tps if await consumer.position(tp) < end[tp]]:
            assert time.monotonic() < deadline, "reading the DC's events took too long"
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                out += [Event.decode(r.value, r.headers) for r in records]
        return out
    finally:
        await consumer.stop()


async def test_drill_convergence_under_faults(
    cluster_factory: Any,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    drill_size: DrillSize,
) -> None:
    clusters = dict(zip(DCS, cluster_factory(*DCS), strict=True))
    boot = {dc: c.bootstrap for dc, c in clusters.items()}
    topic = unique_name("users")
    since = int(time.time() * 1000) - 60_000
    for b in boot.values():
        await create_topic(b, topic, partitions=3)
    config = write_topology(
        tmp_path / "topology.yaml",
        boot,
        flows="full-mesh",
        topics=[re.escape(topic)],
        delivery="exactly-once",
        metrics={"lag_interval_s": 1},  # lag read every second: the bounce shows in it
    )
    args = {dc: ["run", "--config", str(config), "--dc", dc, "--metrics-port", "0"] for dc in DCS}
    procs = {dc: AaProcess(args[dc], tmp_path / f"aa-{dc}.log") for dc in DCS}
    watches = {
        dc: drill.MetricsWatch(partial(drill.scrape_from_log, tmp_path / f"aa-{dc}.log")).start()
        for dc in DCS
    }
    per_dc = max(300, drill_size.records // 6)
    running = {dc: asyncio.Event() for dc in DCS}
    for ev in running.values():
        ev.set()
    writers = [
        asyncio.create_task(
            _write_events(
                dc, boot[dc], topic, per_dc, drill_size.fault_s * 2, running[dc], drill_size.fault_s
            )
        )
        for dc in DCS
    ]
    rng = random.Random(topic)
    try:
        # faults while everyone writes: two mirror kills, then LON's broker bounced
        for dc in rng.sample(DCS, 2):
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            procs[dc].kill9()
            procs[dc] = AaProcess(args[dc], tmp_path / f"aa-{dc}.log")
        # the bounce comes once every mirror runs (a scrape of the process running now): `aa
        # run` refuses to start while a DC of its flows does not answer, and on a loaded machine
        # the restarted processes were still starting when LON went down (all three exited)
        for dc in DCS:
            await watches[dc].until(lambda s: True, timeout=180, message=f"{dc}'s mirror serving")
        running["LON"].clear()
        failed = {dc: _lag_read_failures(watches[dc].last) for dc in ("SF", "NYC")}
        await drill.stop_broker(clusters["LON"])
        down = time.monotonic()
        await asyncio.sleep(drill_size.fault_s)  # the outage
        for dc in ("SF", "NYC"):  # LON->SF, LON->NYC: their source is down, its lag unreadable
            if not any(_lag_read_failures(s) > failed[dc] for s in watches[dc].since(down)):
                await watches[dc].until(
                    lambda s, dc=dc: _lag_read_failures(s) > failed[dc],
                    timeout=90,
                    message=f"{dc}'s failed lag reads of LON->{dc} while LON is down",
                )
        lag_read_failures = sum(_lag_read_failures(watches[dc].last) - failed[dc] for dc in failed)
        await drill.restart_broker(clusters["LON"])
        running["LON"].set()
        healed = time.monotonic()
        await asyncio.gather(*writers)
        total = per_dc * len(DCS)

        async def everywhere() -> bool:
            for b in boot.values():
                events = await _read_events(b, topic)
                if len({e.id for e in events}) < total:
                    return False
            return True

        await eventually(everywhere, timeout=240, interval=1.0, message="every event everywhere")
        converged_s = round(time.monotonic() - healed, 1)
        for dc in DCS:  # each DC's own metrics agree: both inbound flows up, nothing behind

            def caught_up(s: drill.Sample) -> bool:
                return (
                    len(s.label_values(drill.LAG, "source", topic=topic)) == 2
                    and s.total(drill.LAG, topic=topic) == 0
                    and s.total(drill.FLOW_UP) == 2
                )

            await watches[dc].until(caught_up, timeout=120, message=f"{dc}'s lag back to 0")
    finally:
        for w in watches.values():
            await w.stop()
        for p in procs.values():
            p.stop()

    digests, dupes = {}, {}
    for dc, b in boot.items():
        events = await _read_events(b, topic)
        ids = Counter(e.id for e in events)
        dupes[dc] = sum(n - 1 for n in ids.values())
        m = Materializer()
        for e in events:
            m.apply(e)
        digests[dc] = m.digest()
    out = tmp_path / "reconcile"
    # in this process, on a worker thread: the suite's one Spark JVM serves it and the later Spark
    # tests (a subprocess would start its own JVM; the CLI's own process is run by the demo test)
    code = await asyncio.to_thread(
        aa_main,
        [
            "reconcile", "--config", str(config), "--since", str(since),
            "--until", str(int(time.time() * 1000) + 1000), "--out", str(out),
            "--master", "local[2]", "--shuffle-partitions", "2", "--bucket", "1m",
            "--events", re.escape(topic),
        ],
    )  # fmt: skip
    summary = orjson.loads((out / "summary.json").read_bytes())
    drill.report(
        "convergence under faults (3 DCs, full mesh)",
        delivery="exactly-once",
        records=total,
        faults=f"2 mirror kills + LON broker {drill_size.fault_s:.0f} s down",
        recovery_s=converged_s,
        sent=total,
        lost=0,
        duplicated=sum(dupes.values()),
        digests_equal=len(set(digests.values())) == 1,
        lag_read_failures=lag_read_failures,
        reconcile=summary["counts"],
    )
    assert len(set(digests.values())) == 1, digests
    assert dupes == dict.fromkeys(DCS, 0), dupes
    assert code == 0, summary["counts"]
    assert summary["counts"] == dict.fromkeys(
        ("missing", "duplicated", "looped", "divergent", "malformed"), 0
    )
