"""The two heartbeat loops of a mirror process: write this DC's heartbeat, and watch the
remote DCs' heartbeats arriving here (exported as ``aa_heartbeat_age_seconds`` and
``aa_heartbeat_latency_seconds``)."""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiokafka import AIOKafkaProducer

from aa.admin import ClusterAdmin
from aa.config import Topology, client_kwargs
from aa.heartbeat.model import Heartbeat, HeartbeatView
from aa.lifecycle import started
from aa.logs import get_logger
from aa.observe.metrics import Metrics
from aa.tail import TopicReader

HEARTBEAT_TOPIC_CONFIGS = {"retention.ms": str(24 * 3600 * 1000)}
log = get_logger("aa.heartbeat")


def heartbeat_topics(topology: Topology) -> list[str]:
    """The topics heartbeats arrive in, in any DC (the prefixed copies in prefix mode)."""
    hb = topology.heartbeats.topic
    lp = topology.loop_prevention
    if lp.mode == "prefix" and lp.style == "rename":
        return [hb, *(f"{dc}{lp.separator}{hb}" for dc in topology.dc_names)]
    return [hb]


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def write_heartbeats(topology: Topology, dc: str, stop: asyncio.Event) -> None:
    """Every interval, one heartbeat of ``dc`` to the heartbeat topic in ``dc``. A failed write
    raises (the supervisor logs, counts and restarts this loop with backoff); the missing beats
    are themselves the signal on the other side."""
    client = client_kwargs(topology.datacenter(dc))
    topic = topology.heartbeats.topic
    producer: AIOKafkaProducer | None = None
    try:
        while not stop.is_set():
            if producer is None:
                rf = topology.topic_sync.replication_factor
                async with ClusterAdmin(dc, replication_factor=rf, **client) as admin:
                    await admin.create_topics([(topic, 1, HEARTBEAT_TOPIC_CONFIGS)])
                producer = AIOKafkaProducer(**client, acks="all", request_timeout_ms=10_000)
                await started(producer)
            hb = Heartbeat(dc, int(time.time() * 1000))
            await producer.send_and_wait(topic, hb.encode(), dc.encode())
            await _wait(stop, topology.heartbeats.interval_s)
    finally:
        if producer is not None:
            await producer.stop()


async def watch_heartbeats(
    topology: Topology, dc: str, metrics: Metrics, stop: asyncio.Event
) -> None:
    """Every interval, read what arrived and set the age and latency gauges per remote DC."""
    client = client_kwargs(topology.datacenter(dc))
    view = HeartbeatView(dc)
    readers = [TopicReader(t, client, last=1000) for t in heartbeat_topics(topology)]
    try:
        for r in readers:
            await r.start()
        while not stop.is_set():
            # A failed read raises: the supervisor restarts this loop with backoff; meanwhile
            # the age gauges keep their last values (and the failure is counted).
            for r in readers:
                now = int(time.time() * 1000)
                for rec in await r.catch_up():
                    view.add(rec.value, rec.headers, now)
            now = int(time.time() * 1000)
            for remote in view.remotes.values():
                labels = {"local": dc, "remote": remote.remote}
                metrics.heartbeat_age.labels(**labels).set(remote.age_s(now))
                metrics.heartbeat_latency.labels(**labels).set(remote.latency_s)
            await _wait(stop, topology.heartbeats.interval_s)
    finally:
        for r in readers:
            await r.close()
