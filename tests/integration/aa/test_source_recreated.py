"""A source topic deleted and created again under the same name (an operator purging it, or
changing its partition count the hard way) starts its offsets at 0. The positions an
exactly-once flow stored on its target belong to the old incarnation: resuming from them
skipped the new records below them and dropped the rest as "already copied", silently."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from aa.mirror.settings import FlowSettings
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, delete_topic, eventually, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow, supervised

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


async def _recreate(bootstrap: str, topic: str, partitions: int) -> None:
    await delete_topic(bootstrap, topic)

    async def created() -> bool:
        try:
            await create_topic(bootstrap, topic, partitions=partitions)
        except Exception:
            return False
        return True

    await eventually(created, timeout=60, message=f"{topic} created again")


def _eos(sf: str, nyc: str, unique_name: Names) -> FlowSettings:
    tag = uuid.uuid4().hex[:6]
    return FlowSettings(
        f"S{tag}",
        f"N{tag}",
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nyc},
        group_id=unique_name("g"),
        delivery="exactly-once",
        commit_interval_s=0.2,
        topic_sync_interval_s=1.0,
    )


async def test_eos_source_topic_recreated_while_the_flow_was_stopped_copies_every_new_record(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("recreated"), partitions=2)
    settings = _eos(sf, nyc, unique_name)
    router = OriginOnlyRouter(settings.source, settings.target, exact(topic))
    await produce(sf, topic, [Rec(None, f"old-{i}".encode(), partition=i % 2) for i in range(300)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=300, timeout=60, isolation_level="read_committed")

    await _recreate(sf, topic, partitions=2)
    # fewer records than before: every new offset is below the stored position
    await produce(sf, topic, [Rec(None, f"new-{i}".encode(), partition=i % 2) for i in range(100)])
    async with running_flow(settings, router):
        got = await consume_all(
            nyc, topic, count=400, timeout=60, isolation_level="read_committed", settle=2.0
        )
    new = sorted(r.value.decode() for r in got if r.value.startswith(b"new-"))
    assert new == sorted(f"new-{i}" for i in range(100))
    assert len(got) == 400


async def test_eos_source_topic_recreated_while_the_flow_runs_copies_every_new_record(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """The flow notices the new topic id at its next check, aborts the open transaction and
    restarts from the new incarnation's beginning. Records of the new incarnation committed
    before the check may be copied twice (said in docs/mirror.md); none may be missing."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("recreated-live"), partitions=2)
    settings = _eos(sf, nyc, unique_name)
    router = OriginOnlyRouter(settings.source, settings.target, exact(topic))
    await produce(sf, topic, [Rec(None, f"old-{i}".encode(), partition=i % 2) for i in range(300)])
    async with supervised(settings, router) as supervisor:
        await consume_all(nyc, topic, count=300, timeout=60, isolation_level="read_committed")
        await _recreate(sf, topic, partitions=2)
        await produce(
            sf, topic, [Rec(None, f"new-{i}".encode(), partition=i % 2) for i in range(100)]
        )
        got = await consume_all(
            nyc,
            topic,
            count=400,
            timeout=90,
            isolation_level="read_committed",
            distinct=lambda r: r.value,
        )
        state = supervisor.states[settings.name]
        assert state.state == "running", state.last_error
        assert "deleted and created again" in (state.last_error or ""), state.last_error
    new = {r.value.decode() for r in got if r.value.startswith(b"new-")}
    assert new == {f"new-{i}" for i in range(100)}
