"""Broker-side helpers: create topics, count what arrived, write a few warm-up records."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin


@dataclass(frozen=True, slots=True)
class Expect:
    """``count`` records must end up in ``topic`` on the cluster at ``bootstrap``."""

    bootstrap: str
    topic: str
    count: int


async def create_topics(bootstrap: str, topics: Sequence[str], partitions: int) -> None:
    async with ClusterAdmin("bench", bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([(t, partitions, {}) for t in topics], replication_factor=1)
        deadline = time.monotonic() + 30
        while True:
            known = await admin.topics()
            if all(t in known and known[t].partitions == partitions for t in topics):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topics {topics} did not appear on {bootstrap}")
            await asyncio.sleep(0.2)


async def delete_topics(bootstrap: str, prefix: str) -> None:
    """Delete every topic whose name contains ``prefix`` (a run's own topics, to free disk)."""
    async with ClusterAdmin("bench", bootstrap_servers=bootstrap) as admin:
        names = [t for t in await admin.topics() if prefix in t]
        if names:
            await admin.delete_topics(names)


class Counter:
    """Sums the end offsets of the expected topics, one consumer (no group) per cluster:
    ``committed`` ones (read_committed: an exactly-once copy counts once its transaction
    commits), or every one written."""

    def __init__(self, expects: Sequence[Expect], *, committed: bool = True) -> None:
        self.expects = list(expects)
        self._isolation = "read_committed" if committed else "read_uncommitted"
        self._consumers: dict[str, AIOKafkaConsumer] = {}
        self._admins: dict[str, ClusterAdmin] = {}
        self._parts: dict[tuple[str, str], list[TopicPartition]] = {}

    async def __aenter__(self) -> Counter:
        for bootstrap in {e.bootstrap for e in self.expects}:
            self._consumers[bootstrap] = c = AIOKafkaConsumer(
                bootstrap_servers=bootstrap, isolation_level=self._isolation
            )
            await c.start()
            self._admins[bootstrap] = a = ClusterAdmin("bench", bootstrap_servers=bootstrap)
            await a.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for c in self._consumers.values():
            await c.stop()
        for a in self._admins.values():
            await a.close()

    async def counts(self) -> dict[Expect, int]:
        out = {}
        for e in self.expects:
            key = (e.bootstrap, e.topic)
            if key not in self._parts:
                info = (await self._admins[e.bootstrap].topics()).get(e.topic)
                if info is None:  # not created yet (MM2 creates its targets itself)
                    out[e] = 0
                    continue
                self._parts[key] = [TopicPartition(e.topic, p) for p in range(info.partitions)]
            ends = await self._consumers[e.bootstrap].end_offsets(self._parts[key])
            out[e] = sum(ends.values())
        return out


async def records_in(bootstrap: str, topic: str) -> int:
    """The records ever written to ``topic`` (the sum of its end offsets; 0 when missing)."""
    expect = Expect(bootstrap, topic, 0)
    async with Counter([expect]) as counter:
        return (await counter.counts())[expect]


@dataclass(frozen=True, slots=True)
class Arrival:
    """When the first record and the last expected record were seen, in monotonic seconds."""

    first_at: float
    done_at: float
    counts: Mapping[Expect, int]


async def wait_arrival(
    expects: Sequence[Expect],
    *,
    timeout_s: float,
    interval_s: float = 0.1,
    on_first: Callable[[], None] | None = None,
    alive: Callable[[], str | None] | None = None,
) -> Arrival:
    """Poll until every topic holds its expected count of committed records; the first
    arrival is the first record written (an exactly-once copy's before its transaction
    commits: the copy started then); ``alive`` names a dead replicator."""
    deadline = time.monotonic() + timeout_s
    first_at: float | None = None
    async with Counter(expects) as counter, Counter(expects, committed=False) as written:
        while True:
            counts = await counter.counts()
            now = time.monotonic()
            if first_at is None and any((await written.counts()).values()):
                first_at = now
                if on_first:
                    on_first()
            if all(counts[e] >= e.count for e in expects):
                return Arrival(first_at or now, now, counts)
            if alive and (why := alive()):
                raise RuntimeError(f"a replicator died before copying everything: {why}")
            if now > deadline:
                got = {f"{e.bootstrap}/{e.topic}": f"{counts[e]}/{e.count}" for e in expects}
                raise RuntimeError(f"not everything arrived within {timeout_s:.0f}s: {got}")
            await asyncio.sleep(interval_s)


async def produce_marks(bootstrap: str, topic: str, count: int, size: int = 512) -> None:
    """A few records through the normal path (warm-up, readiness probes)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        value = b"w" * size
        futs = [await producer.send(topic, value, partition=None) for _ in range(count)]
        await asyncio.gather(*futs)
    finally:
        await producer.stop()
