"""Replication lag from committed state: per flow and source partition, the source end offset,
the next offset the flow will copy (its group's committed offset in at-least-once mode, the
offsets stored on the target in exactly-once mode), the lag in records, and in seconds (now
minus the timestamp of the oldest record not yet copied).

Lag describes the user's data: aa's own heartbeats, copied like a topic every second, would make
every idle flow look a few records behind; they are left out here and shown as heartbeats (their
age, `aa status`'s heartbeat column and ``aa_heartbeat_age_seconds``)."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.admin import ClusterAdmin
from aa.config import Flow, Topology
from aa.kafka import fetched, switch
from aa.kafka.records import CorruptBatch
from aa.lifecycle import AsyncResource, started
from aa.mirror.build import flow_settings
from aa.mirror.positions import StoredOffsets, stored_offsets
from aa.mirror.settings import FlowSettings
from aa.offsets.groups import group_offsets
from aa.policy import FlowRouter, policy_for


@dataclass(frozen=True, slots=True)
class PartitionLag:
    flow: str
    topic: str
    partition: int
    end: int
    copied: int
    """The next source offset to copy (everything before it is on the target)."""
    seconds: float | None
    """Age of the oldest record not yet copied; ``None`` when there is none."""

    @property
    def records(self) -> int:
        return max(0, self.end - self.copied)


class LagClients(AsyncResource):
    """The source clients one flow's lag read needs: an admin client (topics, the group's
    offsets) and the consumer that reads the oldest record not copied. The exporter keeps them
    open between reads: opening them for every read (three connections and their metadata) was
    ~31 ms of CPU per read, a few percent of a W3 process's whole CPU."""

    def __init__(self, flow: Flow, settings: FlowSettings) -> None:
        self.admin = ClusterAdmin(flow.source, **settings.source_client)
        self.consumer = timestamp_reader(settings)

    async def _open(self) -> None:
        await self.admin.start()
        await started(self.consumer)

    async def _close(self) -> None:
        try:
            await self.consumer.stop()
        finally:
            await self.admin.close()


async def _copied(
    settings: FlowSettings, stored: StoredOffsets | None, admin: ClusterAdmin
) -> dict[TopicPartition, int]:
    if settings.delivery == "exactly-once":
        if stored is not None:
            return await stored.refresh()
        offsets, _ = await stored_offsets(settings)
        return offsets
    return await group_offsets(settings.source_client, settings.group_id, admin.raw)


class LagReader:
    """Lag of several flows, read again and again (the exporter): keeps one tail of each
    exactly-once offsets topic open, so a refresh reads only the offsets stored since the last
    one — the cost stays the same after a month as after a minute."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._stored: dict[str, StoredOffsets] = {}
        self._clients: dict[str, LagClients] = {}
        """Per flow, its source clients, kept between reads; dropped (and closed) by a read
        that fails or is cancelled, so the next read starts from fresh connections."""

    async def flow_lag(self, flow: Flow) -> list[PartitionLag]:
        settings = flow_settings(self.topology, flow)
        stored = self._stored.get(flow.name)
        if stored is None and settings.delivery == "exactly-once":
            stored = self._stored[flow.name] = StoredOffsets(settings)
        clients = self._clients.get(flow.name)
        if clients is None:
            clients = self._clients[flow.name] = LagClients(flow, settings)
        try:
            await clients.start()
            return await flow_lag(self.topology, flow, stored, clients)
        except BaseException:
            if self._clients.get(flow.name) is clients:
                del self._clients[flow.name]
            with contextlib.suppress(Exception):
                await clients.close()
            raise

    async def close(self) -> None:
        for stored in self._stored.values():
            await stored.close()
        self._stored.clear()
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            with contextlib.suppress(Exception):
                await c.close()


def holds_heartbeats(topology: Topology) -> Callable[[str], bool]:
    """Whether a source topic holds aa's heartbeats rather than the user's data (the topic
    named in ``heartbeats.topic``, or its prefixed copy in prefix mode), while heartbeats run."""
    hb = topology.heartbeats
    prefix = topology.loop_prevention.mode == "prefix"
    policy = policy_for(topology)

    def holds(topic: str) -> bool:
        return hb.enabled and (
            topic == hb.topic or (prefix and policy.original_topic(topic) == hb.topic)
        )

    return holds


async def mirrored_partitions(
    router: FlowRouter,
    source_client: Mapping[str, Any],
    *,
    skip: Callable[[str], bool] | None = None,
    admin: ClusterAdmin | None = None,
) -> list[TopicPartition]:
    """The source partitions ``router``'s flow mirrors now (topics it subscribes to and has a
    target for), sorted; none of the topics ``skip`` names. ``admin``: an open client of the
    source to ask (else one is opened for this call)."""
    pattern = re.compile(router.subscription())
    if admin is None:
        async with ClusterAdmin(router.flow.source, **source_client) as own:
            topics = await own.topics()
    else:
        topics = await admin.topics()
    return [
        TopicPartition(name, p)
        for name, info in sorted(topics.items())
        if not info.internal
        and pattern.fullmatch(name)
        and router.target_topic(name)
        and not (skip and skip(name))
        for p in range(info.partitions)
    ]


async def flow_lag(
    topology: Topology,
    flow: Flow,
    stored: StoredOffsets | None = None,
    clients: LagClients | None = None,
) -> list[PartitionLag]:
    """The lag of ``flow``'s user topics now (heartbeats left out); ``stored`` (exactly-once):
    a tail of its offsets topic kept between calls; ``clients``: open source clients kept
    between calls (else opened for this one)."""
    settings = flow_settings(topology, flow)
    if clients is None:
        async with LagClients(flow, settings) as own:
            return await flow_lag(topology, flow, stored, own)
    router = FlowRouter(topology, flow)
    tps = await mirrored_partitions(
        router, settings.source_client, skip=holds_heartbeats(topology), admin=clients.admin
    )
    if not tps:
        return []
    copied = await _copied(settings, stored, clients.admin)
    consumer = clients.consumer
    ends = await consumer.end_offsets(tps)
    begins = await consumer.beginning_offsets(tps)
    nxt = {tp: max(copied.get(tp, begins[tp]), begins[tp]) for tp in tps}
    behind = [tp for tp in tps if nxt[tp] < ends[tp]]
    oldest = await _timestamps(consumer, behind, nxt)
    now = time.time()
    return [
        PartitionLag(
            flow.name,
            tp.topic,
            tp.partition,
            ends[tp],
            nxt[tp],
            None if tp not in oldest else max(0.0, now - oldest[tp] / 1000),
        )
        for tp in tps
    ]


def timestamp_reader(settings: FlowSettings) -> AIOKafkaConsumer:
    """The consumer that reads the oldest record not copied of each partition behind."""
    fetched.install()
    return AIOKafkaConsumer(
        **settings.source_client,
        enable_auto_commit=False,
        isolation_level="read_committed",
        # lean records: a batch that fails its CRC comes as a CorruptBatch, not an exception
        # that would fail the whole read (see aa.kafka.fetched)
        key_deserializer=switch.LeanRecords(),
        # one batch per partition (the broker always returns the first whole): a read wants one
        # timestamp per partition, and decoding whole 1 MiB fetches for it was 3.7% of a W3
        # process's CPU samples (docs/benchmarks-history.md)
        max_partition_fetch_bytes=1,
    )


async def _timestamps(
    consumer: AIOKafkaConsumer, tps: list[TopicPartition], at: dict[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """The timestamp of the record at ``at[tp]`` (the oldest not copied) per partition; none
    for a partition whose log is damaged there (its batch fails its CRC check)."""
    if not tps:
        return {}
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, at[tp])
    out: dict[TopicPartition, int] = {}
    left = set(tps)
    deadline = time.monotonic() + 10
    try:
        while left and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200, max_records=len(tps) * 10)
            for tp, records in batch.items():
                if records and tp in left:
                    left.discard(tp)
                    consumer.pause(tp)
                    if not isinstance(records[0], CorruptBatch):
                        out[tp] = records[0].timestamp
    finally:
        consumer.unsubscribe()  # a kept consumer fetches nothing between reads
    return out
