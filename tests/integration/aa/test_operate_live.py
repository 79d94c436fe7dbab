"""Operate a running process (issue 30) on real brokers: pause a topic while its source is
written, hold the pause across a restart, resume with every record once; reload a topology
that adds a topic to one flow without touching the other; an invalid reload changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition

from aa.admin import ClusterAdmin
from aa.config import load_config
from aa.errors import AaError
from aa.mirror.build import build_flows, select_flows
from aa.mirror.control import Scope
from aa.mirror.operate import RunningProcess
from aa.mirror.supervisor import Supervisor
from aa.tail import read_topic
from tests.helpers.kafka import Rec, create_topic, eventually, produce
from tests.helpers.mirror import (
    OriginOnlyRouter,
    running_supervisor,
    sf_to_nyc,
    short_backoffs,
    until_committed,
)
from tests.helpers.processes import write_topology

pytestmark = pytest.mark.integration


async def _values(bootstrap: str, topic: str) -> list[bytes]:
    records = await read_topic(topic, {"bootstrap_servers": bootstrap})
    return [r.value for r in records]


def _recs(prefix: str, start: int, n: int) -> list[Rec]:
    return [Rec(None, f"{prefix}-{i}".encode()) for i in range(start, start + n)]


@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
async def test_a_paused_topic_copies_nothing_holds_across_a_restart_and_resumes_once(
    dc_clusters: Any, unique_name: Callable[[str], str], delivery: str
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    tag = uuid.uuid4().hex[:6]
    a, b = f"S{tag}", f"N{tag}"
    paused = await create_topic(sf, unique_name("paused"))
    other = await create_topic(sf, unique_name("other"))
    settings = sf_to_nyc(sf, nyc, unique_name("g"), names=(a, b), delivery=delivery)
    router = OriginOnlyRouter(a, b, f"^({paused}|{other})$")
    flow = settings.name

    async def copied(topic: str, n: int) -> None:
        await eventually(
            lambda: _count_at_least(nyc, topic, n), timeout=60, message=f"{n} in {topic}"
        )

    await produce(sf, paused, _recs("p", 0, 10))
    await produce(sf, other, _recs("o", 0, 10))
    async with running_supervisor(short_backoffs([(settings, router)])) as sup:
        await copied(paused, 10)
        await copied(other, 10)
        await sup.plane.pause(Scope(flow, paused), note="test")
        tp = TopicPartition(paused, 0)
        await eventually(lambda: _paused_in(sup, flow, tp), timeout=30, message="pause applied")
        await produce(sf, paused, _recs("p", 10, 20))
        await produce(sf, other, _recs("o", 10, 20))
        await copied(other, 30)  # the flow copies its other topic meanwhile
        assert len(await _values(nyc, paused)) == 10  # nothing of the paused one
        state = RunningProcess(sup, None, dc=None, flow=None).state()  # type: ignore[arg-type]
        assert state["flows"][flow]["topics"][paused]["state"] == "paused"
    # a new process of the flow: the pause is read back from the control topic
    async with running_supervisor(short_backoffs([(settings, router)])) as sup:
        await produce(sf, other, _recs("o", 30, 5))
        await copied(other, 35)
        assert len(await _values(nyc, paused)) == 10
        assert sup.plane.controls[flow].topic_state(paused) == "paused"
        assert await sup.plane.resume(Scope(flow, paused)) == [f"{flow}/{paused}"]
        await copied(paused, 30)
        got = await _values(nyc, paused)
    assert sorted(set(got)) == sorted(f"p-{i}".encode() for i in range(30))  # none lost
    if delivery == "exactly-once":
        assert len(got) == 30  # and none twice


async def _count_at_least(bootstrap: str, topic: str, n: int) -> bool:
    return len(await _values(bootstrap, topic)) >= n


def _paused_in(sup: Supervisor, flow: str, tp: TopicPartition) -> bool:
    live = sup.live(flow)
    return live is not None and live._consumer is not None and tp in live.consumer.paused()


async def test_a_reload_adding_a_topic_to_one_flow_leaves_the_other_untouched(
    dc_clusters: Any, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6].upper()
    a, b, c = f"A{tag}", f"B{tag}", f"C{tag}"
    sf, nyc, lon = (dc_clusters[dc].bootstrap for dc in ("SF", "NYC", "LON"))
    clusters = {a: sf, b: nyc, c: lon}
    first, second, third = (unique_name(n) for n in ("first", "second", "third"))
    await create_topic(sf, first)
    await create_topic(sf, second)
    await create_topic(lon, third)

    def topology(a_topics: list[str], **more: Any) -> Path:
        flows = [{f"{a}->{b}": {"topics": a_topics}}, f"{c}->{b}"]
        return write_topology(tmp_path / "t.yaml", clusters, flows=flows, topics=[third], **more)

    topo = load_config(topology([first]))
    flows = build_flows(topo, select_flows(topo, dc=b))
    sup = short_backoffs(flows)
    process = RunningProcess(sup, topo, dc=b, flow=None)
    await produce(sf, first, _recs("f", 0, 5))
    await produce(sf, second, _recs("s", 0, 5))
    await produce(lon, third, _recs("t", 0, 5))
    async with running_supervisor(sup):
        await eventually(lambda: _count_at_least(nyc, first, 5), timeout=60, message="first")
        await eventually(lambda: _count_at_least(nyc, third, 5), timeout=60, message="third")
        untouched = sup.live(f"{c}->{b}")
        topology([first, second])
        answer = await process.reload()
        assert (answer["restarted"], answer["unchanged"]) == ([f"{a}->{b}"], [f"{c}->{b}"])
        await eventually(lambda: _count_at_least(nyc, second, 5), timeout=60, message="second")
        assert sup.live(f"{c}->{b}") is untouched  # the same run, never stopped
        text = sup.metrics.render().decode()
        assert f'aa_flow_restarts_total{{source="{c}",target="{b}"}}' not in text
        # an invalid file: refused with the error a start gives, nothing changes
        topology([first], tuning={"max_in_flight": 0})
        with pytest.raises(AaError, match=r"tuning\.max_in_flight.*out of range"):
            await process.reload()
        assert sup.live(f"{c}->{b}") is untouched
        assert process.topology.topics_for(process.topology.flow(f"{a}->{b}")).include == (
            first,
            second,
        )


@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
async def test_a_topic_the_target_refuses_fails_alone_and_resumes_when_the_limit_is_raised(
    dc_clusters: Any, unique_name: Callable[[str], str], delivery: str
) -> None:
    """A record over the target topic's max.message.bytes, ``on_error: fail``: before, the
    whole flow stopped for good; now its topic goes ``failed`` with the reason, its committed
    offset stays at the refused record, the flow's other topic keeps copying, and raising the
    limit resumes the topic by itself with nothing lost and (exactly-once) nothing twice."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    tag = uuid.uuid4().hex[:6]
    big = await create_topic(sf, unique_name("big"))
    small = await create_topic(sf, unique_name("small"))
    await create_topic(nyc, big, config={"max.message.bytes": "4096"})
    await create_topic(nyc, small)
    names = (f"S{tag}", f"N{tag}")  # topic sync off: it would copy the source's limit over
    settings = sf_to_nyc(
        sf, nyc, unique_name("g"), names=names, delivery=delivery, topic_sync=False
    )
    router = OriginOnlyRouter(settings.source, settings.target, f"^({big}|{small})$")
    values = [f"b-{i}".encode() for i in range(10)]
    values[5] = b"x" * 6000  # over the target's limit
    await produce(sf, big, [Rec(None, v) for v in values])
    await produce(sf, small, _recs("s", 0, 10))
    sup = short_backoffs([(settings, router)])
    control = sup.plane.controls[settings.name]
    control.retry_s, control.retry_max_s = 0.5, 2.0  # tried again often, for the test
    async with running_supervisor(sup):
        await eventually(lambda: big in control.failures, timeout=60, message="big failed")
        failure = control.failures[big]
        assert (failure.partition, failure.offset) == (0, 5)
        assert "too large" in failure.reason
        state = RunningProcess(sup, None, dc=None, flow=None).state()  # type: ignore[arg-type]
        assert state["flows"][settings.name]["topics"][big]["state"] == "failed"
        assert state["flows"][settings.name]["state"] == "running"  # the flow goes on
        await produce(sf, small, _recs("s", 10, 10))
        await eventually(lambda: _count_at_least(nyc, small, 20), timeout=60, message="small")
        assert len(await _values(nyc, big)) == 5  # the records before the refused one
        if delivery == "at-least-once":
            await until_committed(sf, settings.group_id, big, {0: 5})
        assert big in control.failures  # tried again and refused again meanwhile
        async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
            await admin.set_topic_configs(big, {"max.message.bytes": "1048588"})
        await eventually(lambda: big not in control.failures, timeout=60, message="resumed")
        await eventually(lambda: _count_at_least(nyc, big, 10), timeout=60, message="all of big")
        got = await _values(nyc, big)
    assert sorted(set(got)) == sorted(values)  # nothing lost
    if delivery == "exactly-once":
        assert len(got) == 10  # nothing twice
