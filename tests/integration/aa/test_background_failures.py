"""Background writes are checked on real brokers (issue 10 item 12): a checkpoint the target
refuses is an error with its cause, and the checkpoint state does not advance past it — the
next pass writes it again once the target accepts it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from aa.admin import ClusterAdmin
from aa.checkpoints.task import CheckpointTask, checkpoint_topic
from aa.config import load_config
from aa.mirror.build import build_flows
from aa.offsets.groups import commit_group_offsets
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import running_flow
from tests.helpers.processes import write_topology

pytestmark = pytest.mark.integration


async def test_refused_checkpoint_write_is_an_error_and_state_does_not_advance(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("cp"), partitions=1)
    group = unique_name("app")
    config = write_topology(
        tmp_path / "t.yaml",
        {a: sf, b: nyc},
        flows=[f"{a}->{b}"],
        topics=[re.escape(topic)],
        checkpoints={"enabled": True, "groups": {"include": [re.escape(group)]}},
    )
    topology = load_config(config)
    [(settings, router)] = build_flows(topology, topology.flows)
    # The checkpoint topic refuses every record: a target that cannot take the write.
    cp_topic = await create_topic(
        nyc,
        checkpoint_topic(topology, a, b),
        config={"cleanup.policy": "compact", "max.message.bytes": "16"},
    )
    await produce(sf, topic, [Rec(b"k", f"{i}".encode()) for i in range(20)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=20, timeout=60)  # the group coordinator is up now
        await commit_group_offsets(
            {"bootstrap_servers": sf}, a, group, {TopicPartition(topic, 0): 15}
        )
        task = CheckpointTask(topology, a, b)
        try:
            with pytest.raises(Exception, match=re.escape(cp_topic)) as info:
                await eventually(task.once, timeout=60, message="a checkpoint attempted")
            assert "MessageSizeTooLarge" in str(info.value) or "TooLarge" in str(info.value)
            assert (group, topic, 0) not in task.state.latest  # not advanced: not written
            async with ClusterAdmin(b, bootstrap_servers=nyc) as admin:
                await admin.set_topic_configs(
                    cp_topic, {"cleanup.policy": "compact", "max.message.bytes": "1048576"}
                )
            written = await eventually(task.once, timeout=60, message="checkpoint written")
        finally:
            await task.close()
    assert [(c.group, c.upstream, c.downstream) for c in written] == [(group, 15, 15)]
