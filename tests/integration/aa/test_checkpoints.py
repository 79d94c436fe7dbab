"""Checkpoints on real brokers: a group's SF offsets are translated and stored in NYC, applied
to NYC's idle copy of the group, never to an active one, and never backwards — also after a
restart of the checkpoint task, when the group in SF is rewound."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.checkpoints.task import CheckpointTask
from aa.config import load_config
from aa.mirror.build import build_flows
from aa.offsets.groups import commit_group_offsets, group_offsets
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import running_flow
from tests.helpers.processes import write_topology

pytestmark = pytest.mark.integration


async def test_checkpoints_apply_only_to_idle_groups_and_never_go_back_past_a_foreign_record(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("cp"), partitions=1)
    group, busy = unique_name("app"), unique_name("busy")
    config = write_topology(
        tmp_path / "t.yaml",
        {a: sf, b: nyc},
        flows=[f"{a}->{b}"],
        topics=[re.escape(topic)],
        checkpoints={
            "enabled": True,
            "apply": True,
            "groups": {"include": [re.escape(group), re.escape(busy)]},
        },
    )
    topology = load_config(config)
    [(settings, router)] = build_flows(topology, topology.flows)
    await produce(sf, topic, [Rec(b"k", f"{i}".encode()) for i in range(100)])
    tp = TopicPartition(topic, 0)
    src = {"bootstrap_servers": sf}
    dst = {"bootstrap_servers": nyc}
    await commit_group_offsets(src, a, group, {tp: 60})
    await commit_group_offsets(src, a, busy, {tp: 40})
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=100, timeout=60)
        active = AIOKafkaConsumer(bootstrap_servers=nyc, group_id=busy, enable_auto_commit=False)
        await active.start()
        try:
            active.subscribe([topic])
            await eventually(lambda: bool(active.assignment()), message="busy group active")
            task = CheckpointTask(topology, a, b)
            try:
                written = await eventually(task.once, message="checkpoints written")
            finally:
                await task.close()
        finally:
            await active.stop()
    assert {(c.group, c.upstream, c.downstream) for c in written} == {
        (group, 60, 60),
        (busy, 40, 40),
    }
    assert await group_offsets(dst, group) == {tp: 60}  # idle in NYC: applied
    assert await group_offsets(dst, busy) == {}  # active in NYC: left alone

    # rewind the group in SF; a restarted task neither emits nor applies a step back, and a
    # record in its checkpoint topic that is not a checkpoint does not stop it from starting
    await commit_group_offsets(src, a, group, {tp: 10})
    task = CheckpointTask(topology, a, b)
    await produce(nyc, task.topic, [Rec(b"x", b"not a checkpoint")])
    try:
        assert await task.once() == []
        assert task.state.latest[(group, topic, 0)].downstream == 60
    finally:
        await task.close()
    assert await group_offsets(dst, group) == {tp: 60}
