"""A flow's positions lost while it was stopped.

The positions of an exactly-once flow live in ``aa.offsets.<source>.internal`` on its target.
When that topic is deleted (an operator cleaning up "unused" topics, a cluster restored without
it) the flow started again from the beginning and copied every record a second time, into a
target whose readers were promised each record once. The flow's offset syncs ride in the same
transactions and say how far it copied: the flow resumes from them.

An at-least-once flow keeps its positions in its consumer group's committed offsets. Those
vanish when the group is deleted, or when the flow was stopped longer than the source's
``offsets.retention.minutes`` (7 days by default: a DC down for a week, a flow taken out of the
topology and put back). The flow then started from the beginning too. Its offset syncs on the
target say how far it copied: it resumes from them, for the incarnation of the topic they were
written for only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from aa.mirror.settings import FlowSettings
from tests.conftest import DcCluster
from tests.helpers.kafka import (
    Rec,
    consume_all,
    create_topic,
    delete_group,
    delete_topic,
    produce,
)
from tests.helpers.mirror import (
    OriginOnlyRouter,
    eos_flow,
    exact,
    resumes_without_copying_again,
    running_flow,
    sf_to_nyc,
    supervised,
)

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
    await resumes_without_copying_again(settings, router, topic, isolation_level="read_committed")


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


async def test_eos_positions_lost_after_a_copied_topic_was_deleted_resume_the_others_from_the_syncs(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """The sync topic still holds syncs of a topic the flow copied and the source deleted
    since. Asking the source for that topic's end offsets failed (after the request timeout)
    for every partition at once, so the flow copied everything again."""
    eos = await eos_flow(
        dc_clusters, unique_name, "positions-lost-gone", partitions=2, commit_interval_s=0.2
    )
    sf, nyc, topic, settings = eos.sf, eos.nyc, eos.topic, eos.settings
    gone = await create_topic(sf, unique_name("gone"), partitions=1)
    router = OriginOnlyRouter(settings.source, settings.target, f"{exact(topic)}|{exact(gone)}")
    await produce(sf, topic, [Rec(None, f"old-{i}".encode(), partition=i % 2) for i in range(300)])
    await produce(sf, gone, [Rec(None, b"x")])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=300, timeout=60, isolation_level="read_committed")
        await consume_all(nyc, gone, count=1, timeout=60, isolation_level="read_committed")

    await delete_topic(sf, gone)
    await delete_topic(nyc, settings.eos_offsets_topic)
    await resumes_without_copying_again(settings, router, topic, isolation_level="read_committed")


async def test_group_offsets_expired_while_stopped_resumes_from_the_syncs_without_copying_again(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """The flow also copied a topic deleted since: its syncs are still in the sync topic (the
    source no longer answers for it) and must not stop the others from resuming."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic, gone = unique_name("offsets-expired"), unique_name("offsets-expired-gone")
    group = unique_name("grp")
    await create_topic(sf, topic, partitions=2)
    await create_topic(sf, gone, partitions=1)
    settings = sf_to_nyc(sf, nyc, group, commit_interval_s=0.2)
    router = OriginOnlyRouter("SF", "NYC", f"{exact(topic)}|{exact(gone)}")
    await produce(sf, topic, [Rec(None, f"old-{i}".encode(), partition=i % 2) for i in range(300)])
    await produce(sf, gone, [Rec(None, b"x")])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=300, timeout=60)
        await consume_all(nyc, gone, count=1, timeout=60)

    await delete_topic(sf, gone)
    await delete_group(sf, group)
    await resumes_without_copying_again(settings, router, topic)


async def test_group_offsets_gone_with_a_recreated_source_topic_copy_the_new_topic_from_its_start(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """The broker drops a deleted topic's group offsets with it. The syncs of the old topic
    name its id: they must not move the new topic's start past records never copied (here
    the new topic holds more records than the old one did, so its end offsets are past the
    old syncs' ends)."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic, group = unique_name("recreated"), unique_name("grp")
    await create_topic(sf, topic, partitions=2)
    settings = sf_to_nyc(sf, nyc, group, commit_interval_s=0.2)
    router = OriginOnlyRouter("SF", "NYC", exact(topic))
    await produce(sf, topic, [Rec(None, f"old-{i}".encode(), partition=i % 2) for i in range(300)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=300, timeout=60)

    await delete_topic(sf, topic)
    await create_topic(sf, topic, partitions=2)
    for start in range(0, 400, 100):  # batches of 50 per partition: some end below 150
        new = range(start, start + 100)
        await produce(sf, topic, [Rec(None, f"new-{i}".encode(), partition=i % 2) for i in new])
    async with running_flow(settings, router):
        got = await consume_all(nyc, topic, count=700, timeout=60, settle=3.0)
    values = sorted(r.value.decode() for r in got)
    assert set(values) == {f"old-{i}" for i in range(300)} | {f"new-{i}" for i in range(400)}
    assert len(values) == 700, f"{len(values) - len(set(values))} copied twice"
