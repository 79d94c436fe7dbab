"""`aa failover --execute` for a group name the target DC has never seen (a typo) refuses and
asks for `--create-group`, instead of silently creating that group (issue 12, item 6)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition

from aa.offsets.groups import commit_group_offsets, group_offsets
from tests.helpers.cli import aa_cli
from tests.helpers.kafka import Rec, create_topic, produce
from tests.helpers.processes import write_topology

pytestmark = pytest.mark.integration


async def test_failover_execute_for_a_mistyped_group_asks_for_create_group(
    tmp_path: Path, dc_clusters: dict[str, Any], unique_name: Callable[[str], str]
) -> None:
    nyc = dc_clusters["NYC"].bootstrap
    topic = unique_name("orders")
    group = unique_name("billing-typo")
    config = write_topology(
        tmp_path / "t.yaml",
        {dc: c.bootstrap for dc, c in dc_clusters.items()},
        flows="full-mesh",
        topics=[re.escape(topic)],
    )
    await create_topic(nyc, topic, partitions=2)
    await produce(nyc, topic, [Rec(b"k", b"v", partition=p) for p in (0, 1)])
    argv = ["failover", "--config", str(config), "--group", group, "--to", "NYC"]
    argv += ["--at", "-2m", "--topic", topic, "--execute"]

    refused = await aa_cli(*argv)
    assert refused.code == 2, refused
    assert "Traceback" not in refused.err, refused
    assert f"--group {group}: NYC has no such group" in refused.err, refused
    assert "--create-group" in refused.err, refused
    assert await group_offsets({"bootstrap_servers": nyc}, group) == {}

    created = await aa_cli(*argv, "--create-group")
    assert created.code == 0, created
    assert len(await group_offsets({"bootstrap_servers": nyc}, group)) == 2


async def test_a_mistyped_group_is_answered_with_the_closest_application_group(
    tmp_path: Path, dc_clusters: dict[str, Any], unique_name: Callable[[str], str]
) -> None:
    """Issue 35, item 7: a mistyped --group suggested nothing, and the "known groups" listed
    only aa's internal groups. The application's groups are listed (aa's own left out) with
    the closest name, for --translate, for --at, and in a dry run that would create a group."""
    nyc = dc_clusters["NYC"].bootstrap
    topic = unique_name("orders")
    billing = unique_name("billing")
    typo = billing.replace("billing", "billng")
    config = write_topology(
        tmp_path / "t.yaml",
        {dc: c.bootstrap for dc, c in dc_clusters.items()},
        flows="full-mesh",
        topics=[re.escape(topic)],
    )
    await create_topic(nyc, topic, partitions=1)
    client = {"bootstrap_servers": nyc}
    await commit_group_offsets(client, "NYC", billing, {TopicPartition(topic, 0): 0})
    await commit_group_offsets(client, "NYC", f"aa.mirror.{billing}", {TopicPartition(topic, 0): 0})
    base = ["failover", "--config", str(config), "--group", typo, "--to", "NYC"]

    translate = await aa_cli(*base, "--translate")
    assert translate.code == 2, translate
    assert f"did you mean {billing}?" in translate.err, translate
    assert "aa.mirror." not in translate.err, translate

    at = await aa_cli(*base, "--at", "5m")
    assert at.code == 2, at
    assert f"did you mean {billing}?" in at.err, at

    dry = await aa_cli(*base, "--at", "5m", "--topic", topic)
    assert dry.code == 0, dry
    assert f"note: NYC has no group {typo} yet; did you mean {billing}?" in dry.out, dry
