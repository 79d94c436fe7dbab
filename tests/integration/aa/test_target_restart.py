"""A leader change on the target (issue 10, item 13): the target's only broker restarts while a
flow copies a stream; the flow rides it out inside (the producer re-sends in order), with no
restart, no duplicate and no "Future exception was never retrieved"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from aa.dev import cluster as devcluster
from aa.mirror.settings import FlowSettings
from aa.mirror.supervisor import Backoff, Supervisor
from aa.observe.metrics import Metrics
from tests.conftest import DcCluster, launch_local_clusters
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.mirror import OriginOnlyRouter, exact

pytestmark = pytest.mark.integration


async def test_target_broker_restart_is_ridden_out_without_restart_or_duplicates(
    dc_clusters: dict[str, DcCluster],
    cluster_factory: Any,
    unique_name: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sf = dc_clusters["SF"].bootstrap
    [target] = await asyncio.to_thread(cluster_factory, "T13")
    topic = await create_topic(sf, unique_name("leader"), partitions=2)
    settings = FlowSettings(
        "SF",
        "T13",
        {"bootstrap_servers": sf},
        {"bootstrap_servers": target.bootstrap},
        group_id=unique_name("g"),
        max_poll_records=200,
        commit_interval_s=0.2,
        request_timeout_ms=10_000,
    )
    sup = Supervisor(
        [(settings, OriginOnlyRouter("SF", "T13", exact(topic)))],
        Metrics(),
        backoff=Backoff(initial_s=0.5, max_s=1),
        shutdown_timeout_s=30,
    )
    stop_stream = asyncio.Event()
    sent = 0

    async def stream() -> None:
        nonlocal sent
        while not stop_stream.is_set():
            await produce(sf, topic, [Rec(None, f"{sent + i}".encode()) for i in range(50)])
            sent += 50
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop_stream.wait(), 0.05)  # pacing, not synchronisation

    caplog.set_level(logging.ERROR, logger="asyncio")
    run = asyncio.create_task(sup.run(install_signals=False))
    writer = asyncio.create_task(stream())
    try:
        await consume_all(target.bootstrap, topic, count=500, timeout=90)
        await asyncio.to_thread(devcluster.stop, target)  # the target's leader goes away
        await asyncio.to_thread(launch_local_clusters, [target])
        stop_stream.set()
        await writer
        got = await consume_all(target.bootstrap, topic, count=sent, timeout=180, settle=3.0)
    finally:
        stop_stream.set()
        sup.stop()
        await asyncio.wait_for(run, 60)
        with contextlib.suppress(Exception):
            await writer
    state = sup.states[settings.name]
    counts = Counter(r.value for r in got)
    assert len(counts) == sent
    dupes = sum(n - 1 for n in counts.values())
    assert (dupes, state.restarts) == (0, 0), state.last_error
    unretrieved = [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()]
    assert unretrieved == []
