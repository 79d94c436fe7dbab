"""The positions of an exactly-once flow live in ``aa.offsets.<source>.internal`` on its target.
When that topic is deleted (an operator cleaning up "unused" topics, a cluster restored without
it) the flow started again from the beginning and copied every record a second time, into a
target whose readers were promised each record once. The flow's offset syncs ride in the same
transactions and say how far it copied: the flow resumes from them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from aa.mirror.settings import FlowSettings
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, delete_topic, produce
from tests.helpers.mirror import eos_flow, running_flow, supervised

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


async def test_eos_offsets_topic_deleted_while_stopped_resumes_from_the_syncs_without_copying_again(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    eos = await eos_flow(
        dc_clusters, unique_name, "positions-lost", partitions=2, commit_interval_s=0.2
    )
    sf, nyc, topic, settings, router = eos.sf, eos.nyc, eos.topic, eos.settings, eos.router
    await produce(sf, topic, [Rec(None, f"old-{i}".encode(), partition=i % 2) for i in range(300)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=300, timeout=60, isolation_level="read_committed")

    await delete_topic(nyc, settings.eos_offsets_topic)
    await produce(sf, topic, [Rec(None, f"new-{i}".encode(), partition=i % 2) for i in range(100)])
    async with running_flow(settings, router):
        got = await consume_all(
            nyc, topic, count=400, timeout=60, isolation_level="read_committed", settle=3.0
        )
    values = sorted(r.value.decode() for r in got)
    assert len(values) == 400, f"{len(values) - len(set(values))} copied twice"
    assert set(values) == {f"old-{i}" for i in range(300)} | {f"new-{i}" for i in range(100)}


async def _sync_topic_foreign_record_and_positions_lost(settings: FlowSettings) -> None:
    await delete_topic(settings.target_client["bootstrap_servers"], settings.eos_offsets_topic)
    await produce(
        settings.target_client["bootstrap_servers"],
        settings.sync_topic,
        [Rec(b"x", b"not an offset sync")],
    )


async def _positions_topic_foreign_record(settings: FlowSettings) -> None:
    await produce(
        settings.target_client["bootstrap_servers"],
        settings.eos_offsets_topic,
        [Rec(b"x", b"not a position")],
    )


@pytest.mark.parametrize(
    "damage",
    [_sync_topic_foreign_record_and_positions_lost, _positions_topic_foreign_record],
    ids=["positions-lost-and-a-foreign-record-in-the-sync-topic", "foreign-record-in-positions"],
)
async def test_eos_flow_past_a_foreign_record_in_its_internal_topics_neither_stops_nor_copies_again(
    dc_clusters: dict[str, DcCluster],
    unique_name: Names,
    damage: Callable[[FlowSettings], Awaitable[None]],
) -> None:
    """A record that is not a position or a sync (written there by mistake) made every start of
    the flow fail (a restart loop, then parked), or, with the positions lost, made it copy
    everything again. It is skipped with a warning: the flow's own records still say where the
    copy ended."""
    eos = await eos_flow(dc_clusters, unique_name, "foreign", partitions=1, commit_interval_s=0.2)
    sf, nyc, topic, settings, router = eos.sf, eos.nyc, eos.topic, eos.settings, eos.router
    await produce(sf, topic, [Rec(None, f"old-{i}".encode()) for i in range(50)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=50, timeout=60, isolation_level="read_committed")

    await damage(settings)
    await produce(sf, topic, [Rec(None, f"new-{i}".encode()) for i in range(10)])
    async with supervised(settings, router) as supervisor:
        got = await consume_all(
            nyc, topic, count=60, timeout=60, isolation_level="read_committed", settle=3.0
        )
        state = supervisor.states[settings.name]
        assert (state.state, state.restarts) == ("running", 0), state.last_error
    values = sorted(r.value.decode() for r in got)
    assert len(values) == 60, f"{len(values) - len(set(values))} copied twice"
