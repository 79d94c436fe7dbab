"""Runtime behaviour of `aa run`: new topics picked up live, several processes sharing a flow,
metrics and health over HTTP, graceful shutdown that commits what was copied."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import DcCluster
from tests.helpers.http import http_get
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import committed
from tests.helpers.processes import AaProcess, aa_processes, write_topology

pytestmark = pytest.mark.integration


def _metrics_port(proc: AaProcess) -> int | None:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", proc.output())
    return int(m.group(1)) if m else None


async def test_new_topic_is_picked_up_and_metrics_report_it(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    stem = unique_name("live")
    config = write_topology(
        tmp_path / "t.yaml",
        {"SF": sf, "NYC": nyc},
        flows=["SF->NYC"],
        topics=[f"{re.escape(stem)}-.*"],
        topic_sync={"interval_s": 1},
    )
    first = await create_topic(sf, f"{stem}-a", partitions=2)
    with aa_processes(
        (
            ["run", "--config", str(config), "--flow", "SF->NYC", "--metrics-port", "0"],
            tmp_path / "aa.log",
        )
    ) as [proc]:
        await produce(sf, first, [Rec(b"k", b"a", partition=0)])
        await consume_all(nyc, first, count=1, timeout=60)
        second = await create_topic(sf, f"{stem}-b", partitions=3)  # created while running
        await produce(sf, second, [Rec(f"{i}".encode(), b"b", partition=i % 3) for i in range(30)])
        copied = await consume_all(nyc, second, count=30, timeout=60)
        port = await eventually(lambda: _metrics_port(proc), message="metrics port logged")
        status, body = await http_get(port, "/metrics")
        assert status == 200
        assert (
            f'aa_records_replicated_total{{source="SF",target="NYC",topic="{second}"}} 30.0'
            in body.decode()
        )
        samples = {
            (m.name, frozenset(m.labels.items())): m.value
            for family in text_string_to_metric_families(body.decode())
            for m in family.samples
        }
        flow = {"source": "SF", "target": "NYC", "topic": second}
        for p in range(3):  # MM2's record-count per partition (docs/migrating-from-mm2.md)
            key = frozenset({**flow, "partition": str(p)}.items())
            assert samples[("aa_partition_records_replicated_total", key)] == 10
        assert samples[("aa_record_age_seconds_count", frozenset(list(flow.items())[:2]))] > 0
        key = frozenset({**flow, "state": "running"}.items())
        assert samples[("aa_topic_state", key)] == 1  # the dashboard's topic states
        status, body = await http_get(port, "/api/v1/state")  # the admin API reads freely
        assert status == 200
        topics = orjson.loads(body)["flows"]["SF->NYC"]["topics"]
        assert topics[second]["state"] in ("running", "catching-up")
        assert set(topics[second]["partitions"]) == {"0", "1", "2"}
        status, body = await http_get(port, "/healthz")
        health = orjson.loads(body)
        assert status == 200
        assert health["flows"]["SF->NYC"]["state"] == "running"
    assert sorted(r.partition for r in copied) == sorted(i % 3 for i in range(30))


async def test_two_processes_share_a_flow_and_sigterm_commits(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = unique_name("shared")
    config = write_topology(
        tmp_path / "t.yaml", {"SF": sf, "NYC": nyc}, flows=["SF->NYC"], topics=[topic]
    )
    await create_topic(sf, topic, partitions=4)
    args = ["run", "--config", str(config), "--flow", "SF->NYC", "--metrics-port", "0"]
    with aa_processes((args, tmp_path / "a.log"), (args, tmp_path / "b.log")) as procs:
        await produce(
            sf, topic, [Rec(f"{i}".encode(), f"{i}".encode(), partition=i % 4) for i in range(4000)]
        )
        got = await consume_all(nyc, topic, count=4000, timeout=90, settle=1.0)
        codes = [p.stop() for p in procs]  # SIGTERM: finish in-flight, commit, exit 0
    assert codes == [0, 0]
    assert max(Counter(r.value for r in got).values()) == 1
    assigned = [p.output().count('"partitions_assigned"') for p in procs]
    assert all(n >= 1 for n in assigned), assigned  # both took part in the group
    offsets = await committed(sf, "aa.mirror.SF.NYC", topic, 4)
    assert offsets == {0: 1000, 1: 1000, 2: 1000, 3: 1000}
