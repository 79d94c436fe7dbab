"""Topic sync in headers mode (issue 10 item 4): the target DC owns its same-named topic.

With the same name in every DC, each inbound flow used to push its source's configs onto the
target's application topic (two sources flipped it every sync) and grow its partitions. Now
topic sync creates a missing topic (source partitions and configs) and then leaves an existing
one's configs alone, warning about mismatches (partition counts are the topology's: a target
with fewer is grown, issue 29 item 5); ``topic_sync.headers_mode: sync`` restores syncing, and
prefix mode (each DC's copy is a replica) keeps syncing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from aa.admin import ClusterAdmin
from aa.config import read_yaml
from aa.mirror.build import build_flows
from aa.mirror.topics import TopicSync
from tests.conftest import DcCluster
from tests.helpers.kafka import create_topic, eventually

pytestmark = pytest.mark.integration


def _topology(sf: str, nyc: str, lon: str, topics: list[str], extra: str = "") -> str:
    return (
        f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  NYC: {{bootstrap: '{nyc}'}}\n"
        f"  LON: {{bootstrap: '{lon}'}}\ntopics: {topics!r}\n{extra}"
    )


async def _sync(text: str, flow: str) -> None:
    t = read_yaml(text)
    [(settings, router)] = build_flows(t, (t.flow(flow),))
    async with (
        ClusterAdmin(settings.source, **settings.source_client) as src,
        ClusterAdmin(settings.target, **settings.target_client) as dst,
    ):
        await TopicSync(src, dst, router, settings.config_exclude).sync()


async def _synced(text: str, flow: str, nyc: str, topic: str, retention: str) -> bool:
    """One sync pass; then whether NYC's ``topic`` exists with ``retention``."""
    await _sync(text, flow)
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        if topic not in await admin.topics():
            return False
        return (await admin.topic_configs([topic]))[topic].get("retention.ms") == retention


async def test_headers_mode_leaves_the_target_dcs_own_topic_alone(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc, lon = (dc_clusters[d].bootstrap for d in ("SF", "NYC", "LON"))
    shared, fresh = unique_name("orders"), unique_name("fresh")
    await create_topic(sf, shared, 3, {"retention.ms": "111111111"})
    await create_topic(lon, shared, 4, {"retention.ms": "222222222"})
    await create_topic(nyc, shared, 2, {"retention.ms": "999999999"})
    await create_topic(sf, fresh, 3, {"retention.ms": "111111111"})
    text = _topology(sf, nyc, lon, [shared, fresh])
    with capture_logs() as logs:
        # repeat until the new source topics show in the admin listing (a loaded broker lags)
        await eventually(
            lambda: _synced(text, "SF->NYC", nyc, fresh, "111111111"), message="fresh created"
        )
        await _sync(text, "LON->NYC")
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        topics = await admin.topics()
        cfg = await admin.topic_configs([shared, fresh])
    # partition counts are the topology's (issue 29 item 5): grown to the larger source's
    assert topics[shared].partitions == 4
    assert cfg[shared]["retention.ms"] == "999999999"  # NYC's own, not SF's or LON's
    assert topics[fresh].partitions == 3  # missing: created like the source
    assert cfg[fresh]["retention.ms"] == "111111111"
    warned = {(e["flow"], e["difference"]) for e in logs if e["event"] == "topic_mismatch"}
    assert warned == {("SF->NYC", "configs"), ("LON->NYC", "configs")}


async def test_headers_mode_sync_option_and_prefix_mode_keep_syncing(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc, lon = (dc_clusters[d].bootstrap for d in ("SF", "NYC", "LON"))
    shared = unique_name("orders")
    await create_topic(sf, shared, 3, {"retention.ms": "111111111"})
    await create_topic(nyc, shared, 2, {"retention.ms": "999999999"})
    text = _topology(sf, nyc, lon, [shared], "topic_sync: {headers_mode: sync}\n")
    await eventually(lambda: _synced(text, "SF->NYC", nyc, shared, "111111111"), message="synced")
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        assert (await admin.topics())[shared].partitions == 3
    # prefix mode: SF's `x` is NYC's replica `SF.x`, synced as before
    x = unique_name("x")
    await create_topic(sf, x, 3, {"retention.ms": "111111111"})
    await create_topic(nyc, f"SF.{x}", 1, {"retention.ms": "999999999"})
    text = _topology(sf, nyc, lon, [x], "loop_prevention: prefix\n")
    await eventually(lambda: _synced(text, "SF->NYC", nyc, f"SF.{x}", "111111111"), message="sync")
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        assert (await admin.topics())[f"SF.{x}"].partitions == 3
