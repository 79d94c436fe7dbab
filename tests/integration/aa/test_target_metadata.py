"""The mirror producer keeps the target topics in its metadata once it also writes offset syncs.

aiokafka's client fetches metadata for every topic at start, then, as soon as one topic is
added explicitly (the offset-sync topic, created after the producer started), only for the
topics it tracks. A target topic that existed at start was never tracked: it dropped out of
the metadata, its partitions had no known leader, and the next batches waited a whole request
timeout (30 s, a ``target_waiting`` warning) before ``send_batch`` gave up and re-added it. Seen
in every ``python -m bench.run`` W1/W4 run on 2026-11-23 (a 30 s stall after the first 5,000
records).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from aa.mirror.settings import FlowSettings
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, running_flow

pytestmark = pytest.mark.integration


async def test_copies_after_the_first_offset_sync_do_not_wait_for_target_metadata(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    # Fresh DC names: a fresh offset-sync topic, created after the flow's producer started.
    a, b = f"S{uuid.uuid4().hex[:6]}", f"N{uuid.uuid4().hex[:6]}"
    topic = await create_topic(sf, unique_name("md"), partitions=3)
    await create_topic(nyc, topic, partitions=3)  # known to the producer from its start
    settings = FlowSettings(
        a, b, {"bootstrap_servers": sf}, {"bootstrap_servers": nyc},
        group_id=unique_name("g"), commit_interval_s=0.2,
    )  # fmt: skip
    first = [Rec(None, f"a{i}".encode(), partition=i % 3) for i in range(30)]
    second = [Rec(None, f"b{i}".encode(), partition=i % 3) for i in range(30)]
    with capture_logs() as logs:
        async with running_flow(settings, OriginOnlyRouter(a, b, exact(topic))) as (flow, _):
            await produce(sf, topic, first)
            await consume_all(nyc, topic, count=len(first), timeout=60)
            await eventually(
                lambda: flow.syncs is not None and flow.syncs.written > 0,
                timeout=60,
                message="an offset sync written",
            )
            # The batches queued at the moment the sync topic's metadata lands are the ones
            # that stall; whether any is queued then is a race, so check the cause itself:
            # the producer must still know the target topic's partitions (and leaders).
            producer = flow._producer
            assert producer is not None
            known = producer.client.cluster.partitions_for_topic(topic)
            assert known == {0, 1, 2}, f"target {topic} dropped from the producer's metadata"
            await produce(sf, topic, second)
            got = await consume_all(nyc, topic, count=len(first) + len(second), timeout=120)
    assert len(got) == len(first) + len(second)
    waits = [e for e in logs if e.get("event") == "target_waiting"]
    assert waits == [], f"the flow waited on the target's metadata: {waits}"
