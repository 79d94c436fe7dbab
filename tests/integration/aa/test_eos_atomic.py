"""Exactly-once on the bad day (issue 10, item 8): a failed write inside a transaction aborts
it (nothing half-committed, nothing left open), a fenced process stops with one message instead
of fencing its twin forever, a switch from at-least-once starts where the group left off, and
record counts never include aborted copies."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.mirror.flow import FlowError, MirrorFlow
from aa.mirror.settings import FlowSettings
from aa.mirror.supervisor import Backoff, Supervisor
from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import (
    OriginOnlyRouter,
    committed,
    eos_flow,
    exact,
    running_flow,
    sf_to_nyc,
    supervised,
)

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


def _dcs() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6]
    return f"S{tag}", f"N{tag}"


async def _stable_at_end(bootstrap: str, tp: TopicPartition) -> bool:
    """No open transaction on ``tp``: its last stable offset equals its high watermark."""
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        await consumer.start()
        try:
            ends.append((await consumer.end_offsets([tp]))[tp])
        finally:
            await consumer.stop()
    return ends[0] == ends[1]


async def test_eos_failed_offset_record_aborts_the_transaction(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """The target refuses the source-offset record of a transaction: the transaction is aborted
    (no copy becomes visible, none is counted, no transaction stays open) and the flow stops
    with a message naming the offsets topic."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    a, b = _dcs()
    topic = await create_topic(sf, unique_name("eos-abort"), partitions=1)
    offsets_topic = unique_name("offs")
    # too small for any offset record: every transaction's offset write is refused
    await create_topic(
        nyc, offsets_topic, config={"cleanup.policy": "compact", "max.message.bytes": "100"}
    )
    await produce(sf, topic, [Rec(b"k", f"{i}".encode(), partition=0) for i in range(50)])
    settings = sf_to_nyc(
        sf,
        nyc,
        unique_name("g"),
        names=(a, b),
        delivery="exactly-once",
        offsets_topic=offsets_topic,
        offset_syncs=False,
        transaction_timeout_ms=600_000,  # an open transaction would block readers for 10 min
    )
    metrics = Metrics()
    async with running_flow(settings, OriginOnlyRouter(a, b, exact(topic)), metrics) as (
        flow,
        task,
    ):
        with pytest.raises(FlowError, match=offsets_topic):
            await asyncio.wait_for(task, 90)
    await eventually(
        lambda: _stable_at_end(nyc, TopicPartition(topic, 0)),
        timeout=60,
        message="the failed transaction aborted (last stable offset at the end)",
    )
    seen = await consume_all(nyc, topic, count=0, isolation_level="read_committed", settle=1.0)
    assert seen == []
    assert flow.copied_total == 0
    assert metrics.records.labels(source=a, target=b, topic=topic)._value.get() == 0


async def _stream(bootstrap: str, topic: str, stop: asyncio.Event) -> None:
    i = 0
    while not stop.is_set():
        await produce(bootstrap, topic, [Rec(None, f"{i + j}".encode()) for j in range(20)])
        i += 20
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)  # pacing, not synchronisation


async def test_two_eos_processes_of_one_flow_stop_instead_of_fencing_each_other(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A second process starts the same exactly-once flow: the fenced one stops for good with
    one message naming the transactional id; neither restarts."""
    eos = await eos_flow(
        dc_clusters,
        unique_name,
        "eos-fence",
        partitions=1,
        commit_interval_s=0.2,
    )
    sf, nyc, topic, settings, router = eos.sf, eos.nyc, eos.topic, eos.settings, eos.router
    stop_stream = asyncio.Event()
    stream = asyncio.create_task(_stream(sf, topic, stop_stream))
    try:
        async with supervised(settings, router) as first:
            await consume_all(nyc, topic, count=20, timeout=60, isolation_level="read_committed")
            async with supervised(settings, router) as second:
                states = (first.states[settings.name], second.states[settings.name])
                await eventually(
                    lambda: any(st.state == "failed" for st in states),
                    timeout=90,
                    message="one of the two stops",
                )
                older, newer = states
                assert older.state == "failed", older.last_error
                assert settings.transactional_id in (older.last_error or "")
                await consume_all(
                    nyc, topic, count=400, timeout=60, isolation_level="read_committed"
                )
                assert newer.state == "running"
                assert (older.restarts, newer.restarts) == (0, 0)
    finally:
        stop_stream.set()
        await stream


class _StallsOnce(OriginOnlyRouter):
    """Blocks the whole process (the event loop) for ``stall_s`` in its second routing: a
    process paused mid-transaction, as by a long GC pause, a frozen VM or swapping."""

    def __init__(self, source: str, target: str, pattern: str, stall_s: float) -> None:
        super().__init__(source, target, pattern)
        self.calls, self._stall_s = 0, stall_s

    def route_batch(self, topic: str, partition: int, records: Any, believed: Any = None) -> Any:
        self.calls += 1
        if self.calls == 2:
            time.sleep(self._stall_s)  # on purpose: nothing of the process runs meanwhile
        return super().route_batch(topic, partition, records)


async def test_eos_transaction_the_target_timed_out_restarts_the_flow_instead_of_stopping_it(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A transaction open longer than its timeout (the process stalled, or the target was
    away that long) is aborted by the target, which bumps the producer's epoch: the flow's
    next write was refused as if another process had fenced it, and the flow stopped for good
    with "another process took over". Only the transaction was lost: the flow restarts, and
    copies its records again, once."""
    eos = await eos_flow(
        dc_clusters, unique_name, "eos-timeout", partitions=1, transaction_timeout_ms=2_000
    )
    # the test brokers look for timed-out transactions every 500 ms (tests/conftest.py)
    router = _StallsOnce(eos.settings.source, eos.settings.target, exact(eos.topic), 5.0)
    runs: list[MirrorFlow] = []

    def flow(settings: FlowSettings, router: Any, metrics: Metrics) -> MirrorFlow:
        # the first run keeps one transaction open across the stall, with a 2 s timeout; the
        # restart commits every commit_interval_s (1 s) under the usual timeout: under 2 s, a
        # target slower than 1 s to commit (a loaded machine) timed out every transaction,
        # restart after restart, and nothing was copied in 90 s (CI, a clean clone)
        if not runs:
            settings = dataclasses.replace(settings, commit_interval_s=60.0)
        else:
            settings = dataclasses.replace(settings, transaction_timeout_ms=60_000)
        runs.append(MirrorFlow(settings, router, metrics))
        return runs[-1]

    await produce(eos.sf, eos.topic, [Rec(b"k", f"a{i}".encode()) for i in range(10)])
    sup = Supervisor(
        [(eos.settings, router)],
        Metrics(),
        backoff=Backoff(initial_s=0.2, max_s=1.0),
        shutdown_timeout_s=20,
        flow_factory=flow,
    )
    run = asyncio.create_task(sup.run(install_signals=False))
    try:
        state = sup.states[eos.settings.name]
        await eventually(lambda: router.calls >= 1, timeout=60, message="first batch routed")
        await produce(eos.sf, eos.topic, [Rec(b"k", f"b{i}".encode()) for i in range(10)])
        await eventually(
            lambda: state.restarts >= 1 or state.state == "failed",
            timeout=60,
            message="the flow fails once",
        )
        assert state.state != "failed", state.last_error
        assert "timed out" in (state.last_error or ""), state.last_error
        copied = await consume_all(
            eos.nyc, eos.topic, count=20, timeout=90, isolation_level="read_committed", settle=1.0
        )
    finally:
        sup.stop()
        await asyncio.wait_for(run, 60)
    assert sorted(r.value for r in copied) == sorted(
        [f"a{i}".encode() for i in range(10)] + [f"b{i}".encode() for i in range(10)]
    )


async def test_switch_from_at_least_once_to_exactly_once_resumes_from_group_offsets(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    a, b = _dcs()
    topic = await create_topic(sf, unique_name("switch"), partitions=2)
    group = unique_name("g")
    common = {"group_id": group, "commit_interval_s": 0.2}
    alo = FlowSettings(a, b, {"bootstrap_servers": sf}, {"bootstrap_servers": nyc}, **common)  # type: ignore[arg-type]
    router = OriginOnlyRouter(a, b, exact(topic))
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=i % 2) for i in range(300)])
    async with running_flow(alo, router):
        await consume_all(nyc, topic, count=300, timeout=60)
        await eventually(
            lambda: _equals(committed(sf, group, topic, 2), {0: 150, 1: 150}),
            timeout=60,
            message="at-least-once committed 150 per partition",
        )
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=i % 2) for i in range(300, 400)])
    eos = FlowSettings(
        a,
        b,
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nyc},
        delivery="exactly-once",
        **common,  # type: ignore[arg-type]
    )
    async with running_flow(eos, router):
        got = await consume_all(
            nyc, topic, count=400, timeout=60, isolation_level="read_committed", settle=2.0
        )
    assert sorted(int(r.value) for r in got) == list(range(400))


async def _equals(coro: object, want: object) -> bool:
    return await coro == want  # type: ignore[misc]
