"""`aa failover --execute` for a group name the target DC has never seen (a typo) refuses and
asks for `--create-group`, instead of silently creating that group (issue 12, item 6)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aa.offsets.groups import group_offsets
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
