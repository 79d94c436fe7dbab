"""Headers mode: partition counts are a property of the topology (issue 29 item 5).

The same topic name lives in every DC. When one DC's topic grows, the flows out of it grow the
topic in the other DCs (partitions only ever grow), so every record keeps its partition and
translation stays exact. Before, a target the DC owns was never grown: a new source partition's
records went by key hash while running, and after a restart *every* record of the topic did
(SF/0 landing in NYC/1), with translation answering ``repartitioned`` for the whole topic."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from aa.admin import ClusterAdmin
from aa.config import Topology, read_yaml
from aa.mirror.build import build_flows
from aa.mirror.settings import FlowSettings
from aa.offsets.store import OffsetSyncStore, Position
from aa.policy import FlowRouter
from aa.provenance import SRC
from tests.conftest import DcCluster
from tests.helpers.kafka import (
    Rec,
    consume_all,
    create_topic,
    produce,
    wait_for_partitions,
)
from tests.helpers.mirror import running_flow

pytestmark = pytest.mark.integration


def _topology(sf: str, nyc: str, topic: str) -> Topology:
    """A headers-mode two-DC mesh (default ``topic_sync.headers_mode: create-only``) under DC
    names unique to the test."""
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    return read_yaml(
        f"datacenters:\n  {a}: {{bootstrap: '{sf}'}}\n  {b}: {{bootstrap: '{nyc}'}}\n"
        f"topics: ['{topic}']\ntopic_sync: {{interval_s: 1}}\n"
    )


def _flow(t: Topology) -> tuple[FlowSettings, FlowRouter]:
    """The flow into the second DC, as a new process builds it."""
    [flow] = build_flows(t, t.inbound(t.dc_names[1]))
    return flow


def _records(partitions: range, n: int, tag: str) -> list[Rec]:
    return [
        Rec(f"key-{i}".encode(), f"{tag}-{p}-{i}".encode(), partition=p)
        for p in partitions
        for i in range(n)
    ]


async def _copies_keep_their_partition(
    nyc: str, topic: str, count: int, settings: FlowSettings
) -> None:
    """NYC holds ``count`` copies, each in its source partition, and translation of every copied
    source offset is exact: the target offset of that copy."""
    await wait_for_partitions(nyc, topic, 3, timeout=60)  # consume_all reads those it finds
    got = await consume_all(nyc, topic, count=count, timeout=60, settle=0.5)
    assert len(got) == count
    landed: dict[tuple[int, int], int] = {}
    for r in got:
        _, _, part, offset = dict(r.headers)[SRC].decode().rsplit("/", 3)
        assert int(part) == r.partition, f"source partition {part} landed in {r.partition}"
        landed[(r.partition, int(offset))] = r.offset

    async def inexact() -> list[tuple[int, int, Position]]:
        """The copied source offsets whose translation is not their copy's offset, exact."""
        store = await OffsetSyncStore(settings.source, settings.target).load(
            settings.sync_topic, settings.target_client
        )
        answers = {(p, o): store.translate(topic, p, o) for p, o in landed}
        return [
            (p, o, pos)
            for (p, o), pos in sorted(answers.items())
            if (pos.offset, pos.exactness) != (landed[(p, o)], "exact")
        ]

    # a running flow writes a run's syncs within the flush interval after its copies: until
    # then translation of the newest copies is behind (read again), which is not the defect
    deadline, left = time.monotonic() + 60, await inexact()
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        left = await inexact()
    assert not left, f"{len(left)} copied offsets not translated exactly: {left[:5]}"


async def test_source_grown_while_running_grows_the_target_dcs_own_topic(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"), partitions=2)
    await create_topic(nyc, topic, partitions=2)  # NYC's own topic, same count
    settings, router = _flow(_topology(sf, nyc, topic))
    await produce(sf, topic, _records(range(2), 10, "before"))
    with capture_logs() as logs:
        async with running_flow(settings, router) as (_, task):
            await consume_all(nyc, topic, count=20, timeout=60)
            async with ClusterAdmin("SF", bootstrap_servers=sf) as admin:
                await admin.add_partitions(topic, 3)
            await produce(sf, topic, _records(range(3), 10, "after"))
            await _copies_keep_their_partition(nyc, topic, 50, settings)
            assert not task.done()
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        assert (await admin.topics())[topic].partitions == 3
    grown = [e for e in logs if e["event"] == "partitions_added" and e["topic"] == topic]
    assert grown, "no partitions_added line"
    assert "only ever grow" in grown[0]["detail"]
    assert not [e for e in logs if e["event"] == "target_lacks_partition"]


async def test_source_grown_then_flow_restarted_keeps_every_partition(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"), partitions=2)
    await create_topic(nyc, topic, partitions=2)
    t = _topology(sf, nyc, topic)
    settings, router = _flow(t)
    await produce(sf, topic, _records(range(2), 10, "before"))
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=20, timeout=60)
    async with ClusterAdmin("SF", bootstrap_servers=sf) as admin:
        await admin.add_partitions(topic, 3)
    await produce(sf, topic, _records(range(3), 10, "after"))
    settings, router = _flow(t)  # a new process: placement decided afresh
    async with running_flow(settings, router):
        await _copies_keep_their_partition(nyc, topic, 50, settings)
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        assert (await admin.topics())[topic].partitions == 3
