"""A flow at the edges of its source (issue 10): transactional sources (item 9), partitions
revoked while a batch is routed (item 11), a source that grows partitions (item 3)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from aa.admin import ClusterAdmin
from aa.mirror.context import StageContext
from aa.mirror.flow import MirrorFlow
from aa.mirror.settings import FlowSettings
from aa.mirror.target import Target
from aa.observe.metrics import Metrics
from aa.offsets.groups import group_state
from tests.conftest import DcCluster
from tests.helpers.kafka import (
    Rec,
    consume_all,
    create_topic,
    eventually,
    produce,
    wait_for_partitions,
)
from tests.helpers.mirror import OriginOnlyRouter, committed, exact, running_flow, sf_to_nyc

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


async def _is(coro: object, want: object) -> bool:
    return await coro == want  # type: ignore[misc]


async def _transaction(bootstrap: str, topic: str, app: str) -> None:
    """20 records in one committed transaction into partition 0: the commit marker follows
    them at offset 20."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=app)
    await producer.start()
    try:
        async with producer.transaction():
            for i in range(20):
                await producer.send(topic, f"v{i}".encode(), key=b"k", partition=0)
    finally:
        await producer.stop()


async def test_transactional_source_commits_past_the_commit_marker(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """Records written in a transaction end with a commit marker: once everything visible is
    copied, the committed position is the end offset (past the marker) and lag is 0."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("txsrc"))
    await _transaction(sf, topic, unique_name("app"))
    group = unique_name("g")
    settings = sf_to_nyc(sf, nyc, group)
    metrics = Metrics()
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic)), metrics):
        await consume_all(nyc, topic, count=20, timeout=60)
        # 20 records and the commit marker at offset 20: the end offset is 21
        await eventually(
            lambda: _is(committed(sf, group, topic, 1), {0: 21}),
            timeout=60,
            message="committed past the commit marker",
        )
        lag = metrics.lag.labels(source="SF", target="NYC", topic=topic, partition="0")
        await eventually(lambda: lag._value.get() == 0, timeout=30, message="lag 0")


async def test_transactional_partition_reaches_committed_lag_0_while_another_is_busy(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """Issue 29 item 6: a partition ending in a commit marker stayed one behind for as long as
    another partition kept every fetch non-empty (positions past markers were committed only
    when a whole fetch came back empty): committed lag never reached 0 and ``aa failback
    --execute`` was refused as "resync incomplete". Positions move past markers per partition.

    Partition 1 is busy for the whole test: a backlog the flow copies at a rate limit (so every
    fetch holds some of it, however fast the machine), and a record every 10 ms on top."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("txbusy"), partitions=2)
    backlog = 2000
    # small source batches, fetched a few at a time: partition 0's records are not queued in
    # the consumer behind the whole backlog (aiokafka returns a partition's buffer first)
    records = [Rec(None, b"x" * 100, partition=1) for _ in range(backlog)]
    await produce(sf, topic, records, max_batch_size=1024)
    await _transaction(sf, topic, unique_name("app"))
    group = unique_name("g")
    busy = AIOKafkaProducer(bootstrap_servers=sf, linger_ms=0)
    await busy.start()

    async def every_10_ms() -> None:
        for i in range(1_000_000):
            await busy.send_and_wait(topic, f"b{i}".encode(), partition=1)
            await asyncio.sleep(0.01)  # the load: a record every 10 ms

    writer = asyncio.create_task(every_10_ms())
    seen: list[dict[int, int | None]] = []

    async def partition_0_done() -> bool:
        seen.append(await committed(sf, group, topic, 2))
        return seen[-1][0] == 21  # 20 records and the commit marker at offset 20

    try:
        # ~1 KB per fetch at 20 KB/s: the backlog alone keeps partition 1 busy ~10 s
        settings = sf_to_nyc(
            sf, nyc, group, max_poll_records=20, max_bytes_per_s=20_000,
            max_partition_fetch_bytes=1024,
        )  # fmt: skip
        async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as (_, t):
            await eventually(partition_0_done, timeout=120, message="partition 0 past its marker")
            assert not t.done()
        assert not writer.done()
    finally:
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writer
        await busy.stop()
    busy_at = seen[-1][1]
    assert busy_at is not None
    assert busy_at < backlog, f"partition 1 was no longer busy: committed at {busy_at}"


class _SlowFirstSubmit(MirrorFlow):
    """Holds its first produced batch until the group has rebalanced to two members (or 10 s
    passed, when the revoke waits for this batch): partitions are revoked while it routes."""

    def __init__(self, settings: FlowSettings, router: OriginOnlyRouter) -> None:
        super().__init__(settings, router, Metrics())
        self.routing = asyncio.Event()

    async def held(self) -> None:
        if not self.routing.is_set():
            self.routing.set()
            client = self.settings.source_client
            with contextlib.suppress(AssertionError):  # the revoke waits for this batch
                await eventually(lambda: _rebalanced(client, self.settings.group_id), timeout=10)

    def make_target(self, ctx: StageContext) -> Target:
        return _HeldTarget(self, ctx)


class _HeldTarget(Target):
    """A target whose submit first awaits the flow's ``held()`` (the fault of a test)."""

    def __init__(self, flow: Any, ctx: StageContext) -> None:
        super().__init__(ctx)
        self._flow = flow

    async def submit(
        self, builder: Any, topic: str, partition: int, lane: int = 0
    ) -> asyncio.Future[Any]:
        await self._flow.held()
        return await super().submit(builder, topic, partition, lane)


async def _rebalanced(client: Any, group: str) -> bool:
    state = await group_state(client, group)
    return state.state == "Stable" and state.members == 2


async def _copies_when_a_second_owner_joins(
    dc_clusters: dict[str, DcCluster],
    unique_name: Names,
    first_flow: Callable[[FlowSettings, OriginOnlyRouter], Any],
) -> Counter[bytes]:
    """200 records in 2 partitions; ``first_flow`` copies them and signals ``routing`` while
    it holds its first batch; a second process joins the group then. Returns how often each
    record is in the target once both stopped."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("revoke"), partitions=2)
    await produce(sf, topic, [Rec(None, f"{i}".encode(), partition=i % 2) for i in range(200)])
    settings = sf_to_nyc(sf, nyc, unique_name("g"))
    router = OriginOnlyRouter("SF", "NYC", exact(topic))
    first = first_flow(settings, router)
    stop = asyncio.Event()
    task = asyncio.create_task(first.run(stop))
    try:
        await asyncio.wait_for(first.routing.wait(), 60)
        async with running_flow(settings, router):
            await consume_all(nyc, topic, count=200, timeout=120)
            stop.set()
            await asyncio.wait_for(task, 90)  # its held batch is produced or dropped by now
    finally:
        stop.set()
        await asyncio.wait_for(task, 90)
    got = await consume_all(nyc, topic, count=200, timeout=60, settle=3.0)
    return Counter(r.value for r in got)


async def test_batch_routed_during_revoke_is_not_produced_after_it(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A second process joins while the first routes a batch: that batch is produced and
    committed before the revoke completes (or dropped), never produced after it, so the new
    owner of a partition does not copy it a second time."""
    counts = await _copies_when_a_second_owner_joins(dc_clusters, unique_name, _SlowFirstSubmit)
    assert len(counts) == 200
    assert [v for v, n in counts.items() if n > 1] == []


class _SlowDuringRebalance(MirrorFlow):
    """Once the group starts rebalancing, its first produced batch takes ``hold_s`` longer
    (a slow target): the revoke waits that long for it."""

    def __init__(self, settings: FlowSettings, router: OriginOnlyRouter, hold_s: float) -> None:
        super().__init__(settings, router, Metrics())
        self.routing = asyncio.Event()
        self.hold_s = hold_s

    async def held(self) -> None:
        if not self.routing.is_set():
            self.routing.set()
            client, group = self.settings.source_client, self.settings.group_id
            await eventually(
                lambda: _is_state(client, group, "PreparingRebalance"),
                timeout=120,
                message="the second member started a rebalance",
            )
            await asyncio.sleep(self.hold_s)  # the fault: a batch slower than the session

    def make_target(self, ctx: StageContext) -> Target:
        return _HeldTarget(self, ctx)


async def _is_state(client: Any, group: str, state: str) -> bool:
    return (await group_state(client, group)).state == state


async def test_revoke_slower_than_the_session_timeout_keeps_the_member_and_its_commit(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A revoke that waits for a batch longer than the consumer's session timeout (10 s): the
    group must wait for the member (Java's rebalance timeout is max.poll.interval.ms, aiokafka's
    default is the session timeout) instead of evicting it, so its commit lands and the new
    owner does not copy the whole partition a second time."""
    counts = await _copies_when_a_second_owner_joins(
        dc_clusters, unique_name, lambda s, r: _SlowDuringRebalance(s, r, hold_s=15.0)
    )
    assert len(counts) == 200
    assert [v for v, n in counts.items() if n > 1] == []


async def test_source_partitions_grown_keep_their_partition_while_topic_sync_catches_up(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """The source grows from 2 to 4 partitions long before the next topic sync: records of the
    old partitions stay in their partitions (no switch to key hashing for the catch-up), and
    the new partitions get their own once the flow grew the target on first sight."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("grow"), partitions=2)
    settings = sf_to_nyc(
        sf,
        nyc,
        unique_name("g"),
        topic_sync_interval_s=3600,  # no periodic sync during the test
    )
    # null keys: only the source partition says where a record belongs
    await produce(
        sf,
        topic,
        [Rec(None, f"0-{p}-{i}".encode(), partition=p) for p in (0, 1) for i in range(10)],
    )
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as (flow, _):
        await consume_all(nyc, topic, count=20, timeout=60)
        async with ClusterAdmin("SF", bootstrap_servers=sf) as admin:
            await admin.add_partitions(topic, 4)
        await wait_for_partitions(sf, topic, 4)

        async def sees_four() -> bool:
            # the consumer's metadata refresh, which the periodic one would do in its time
            await flow.consumer._client.force_metadata_update()
            return len(flow.consumer.assignment()) == 4

        await eventually(sees_four, timeout=60, message="the flow consumes 4 partitions")
        await produce(
            sf,
            topic,
            [Rec(None, f"1-{p}-{i}".encode(), partition=p) for p in range(4) for i in range(10)],
        )
        # the reader picks its partitions when it starts: not before the flow grew the target
        await wait_for_partitions(nyc, topic, 4)
        got = await consume_all(nyc, topic, count=60, timeout=90, settle=1.0)
    misplaced = [(r.value, r.partition) for r in got if int(r.value.split(b"-")[1]) != r.partition]
    assert misplaced == []
    assert len(got) == 60
