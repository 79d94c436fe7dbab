"""Heartbeats and lag on real brokers: the age of a remote DC's newest heartbeat rises while the
flow carrying it is stopped and falls when it resumes (`aa status`, and the metric of the
running process); `aa lag` reports records and seconds from committed state, in both modes."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from aa.config import load_config
from aa.lag import flow_lag
from aa.mirror.build import build_flows
from tests.conftest import DcCluster
from tests.helpers.cli import aa_cli
from tests.helpers.http import http_get
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import running_flow
from tests.helpers.processes import AaProcess, write_topology

pytestmark = pytest.mark.integration


def _dcs() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6]
    return f"S{tag}", f"N{tag}"


async def _age(config: Path, local: str, remote: str) -> float | None:
    r = await aa_cli("status", "--config", str(config), "--json")
    for dc in orjson.loads(r.out)["dcs"]:
        for row in dc["flows"] if dc["dc"] == local else []:
            if row["source"] == remote and row["heartbeat_age_s"] is not None:
                return float(row["heartbeat_age_s"])
    return None


async def test_heartbeat_age_rises_while_stopped_and_falls_on_resume(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    a, b = _dcs()
    clusters = {a: dc_clusters["SF"].bootstrap, b: dc_clusters["NYC"].bootstrap}
    hb = unique_name("hb")
    config = write_topology(
        tmp_path / "t.yaml",
        clusters,
        flows="full-mesh",
        topics=[re.escape(unique_name("none"))],
        heartbeats={"enabled": True, "interval_s": 0.5, "topic": hb},
    )
    run = ["run", "--config", str(config), "--metrics-port", "0"]
    writer_a = AaProcess([*run, "--dc", a], tmp_path / "a.log")  # writes a's heartbeats
    into_b = AaProcess([*run, "--dc", b], tmp_path / "b.log")  # copies them a -> b
    try:

        async def seen() -> bool:
            return await _age(config, b, a) is not None

        # both processes start, a creates its heartbeat topic, b's next topic refresh finds it:
        # over 60 s with two test suites on the machine (load 35-47), so the bound is generous
        await eventually(seen, timeout=240, interval=0.5, message=f"{b} sees {a}'s heartbeats")
        m = await eventually(
            lambda: re.search(r"http://127\.0\.0\.1:(\d+)/metrics", into_b.output()),
            message="metrics port",
        )
        series = f'aa_heartbeat_age_seconds{{local="{b}",remote="{a}"}}'

        async def metric() -> float | None:
            _, body = await http_get(int(m.group(1)), "/metrics")
            hit = re.search(re.escape(series) + r" (\S+)", body.decode())
            return float(hit.group(1)) if hit else None

        await eventually(metric, timeout=30, message="heartbeat age metric")
        # aa status joins the process's /healthz and /metrics to what Kafka says
        url = f"{b}=http://127.0.0.1:{m.group(1)}"
        shown = await aa_cli("status", "--config", str(config), "--metrics", url, "--json")
        [into] = [d for d in orjson.loads(shown.out)["dcs"] if d["dc"] == b]
        [row] = into["flows"]
        assert (row["flow"], row["state"], row["restarts"]) == (f"{a}->{b}", "running", 0), into
        assert into["process"] == url.split("=", 1)[1], into
        table = await aa_cli("status", "--config", str(config), "--metrics", url)
        assert f"{a}->{b}" in table.out, table
        assert "running" in table.out, table
        assert "Traceback" not in table.err, table
        into_b.stop()
        ages: list[float] = []

        async def rising() -> bool:  # read after read, by more than the heartbeat interval
            age = await _age(config, b, a)
            if age is not None:
                ages.append(age)
            return len(ages) >= 2 and ages[-1] > 3.0 and ages[-1] > ages[-2] + 0.5

        await eventually(rising, timeout=60, interval=0.5, message="age rises while stopped")
        stale = ages[-1]
        into_b = AaProcess([*run, "--dc", b], tmp_path / "b2.log")

        async def fell() -> bool:  # only a heartbeat copied after the restart lowers it
            age = await _age(config, b, a)
            return age is not None and age < stale - 0.5

        await eventually(fell, timeout=240, interval=0.5, message="age falls on resume")
    finally:
        writer_a.stop()
        into_b.stop()


@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
async def test_lag_from_committed_state(
    tmp_path: Path,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    delivery: str,
) -> None:
    a, b = _dcs()
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("lag"), partitions=2)
    config = write_topology(
        tmp_path / "t.yaml", {a: sf, b: nyc}, flows=[f"{a}->{b}"], topics=[topic], delivery=delivery
    )
    topology = load_config(config)
    [(settings, router)] = build_flows(topology, topology.flows)
    await produce(sf, topic, [Rec(b"k", b"v", partition=i % 2) for i in range(100)])
    async with running_flow(settings, router):
        await consume_all(nyc, topic, count=100, timeout=60, isolation_level="read_committed")

        async def caught_up() -> bool:
            rows = await flow_lag(topology, topology.flows[0])
            return [r.records for r in rows] == [0, 0]

        await eventually(caught_up, timeout=30, message="lag 0 once copied and committed")
    await produce(sf, topic, [Rec(b"k", b"late", partition=0) for _ in range(30)])
    out = await aa_cli("lag", "--config", str(config), "--json")
    assert out.code == 0, out
    rows = {(r["topic"], r["partition"]): r for r in orjson.loads(out.out)}
    assert rows[(topic, 0)]["lag_records"] == 30
    assert rows[(topic, 0)]["end"] == 80
    assert rows[(topic, 0)]["copied"] == 50
    assert rows[(topic, 0)]["lag_seconds"] is not None
    assert rows[(topic, 1)]["lag_records"] == 0
    assert rows[(topic, 1)]["lag_seconds"] is None


async def test_an_idle_flow_shows_its_heartbeats_as_heartbeats_not_as_lag(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """Issue 35, item 3: the heartbeats topic (one record a second) was counted as the flow's
    lag: every idle flow showed lag 2-3 and a catch-up rate. `aa lag`, `aa status` and the
    exported lag gauges describe the user's topics; the heartbeat is shown by its age."""
    a, b = _dcs()
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("idle"), partitions=1)
    hb = unique_name("hb")
    config = write_topology(
        tmp_path / "t.yaml",
        {a: sf, b: nyc},
        flows="full-mesh",
        topics=[topic],
        heartbeats={"enabled": True, "interval_s": 0.5, "topic": hb},
        metrics={"lag_interval_s": 1},
    )
    run = ["run", "--config", str(config), "--metrics-port", "0"]
    writer_a = AaProcess([*run, "--dc", a], tmp_path / "a.log")
    into_b = AaProcess([*run, "--dc", b], tmp_path / "b.log")
    try:
        m = await eventually(
            lambda: re.search(r"http://127\.0\.0\.1:(\d+)/metrics", into_b.output()),
            message="metrics port",
        )
        read_at = f'aa_committed_lag_read_timestamp_seconds{{source="{a}",target="{b}"}}'

        async def lag_exported() -> str | None:
            _, body = await http_get(int(m.group(1)), "/metrics")
            text = body.decode()
            return text if read_at in text and await _age(config, b, a) is not None else None

        page = await eventually(lag_exported, timeout=60, message="lag read, heartbeat seen")
        gauges = [line for line in page.splitlines() if line.startswith("aa_committed_lag_")]
        assert not [g for g in gauges if f'topic="{hb}"' in g], gauges
        assert [g for g in gauges if f'topic="{topic}"' in g], gauges
        lag = await aa_cli("lag", "--config", str(config), "--json")
        assert lag.code == 0, lag
        assert {r["topic"] for r in orjson.loads(lag.out)} == {topic}, lag.out
        url = f"{b}=http://127.0.0.1:{m.group(1)}"
        shown = await aa_cli("status", "--config", str(config), "--metrics", url, "--json")
        [into] = [d for d in orjson.loads(shown.out)["dcs"] if d["dc"] == b]
        [row] = into["flows"]
        assert row["lag_records"] == 0, row
        assert row["heartbeat_age_s"] is not None, row
    finally:
        writer_a.stop()
        into_b.stop()


async def test_failback_counts_no_heartbeat_among_the_records_left_behind(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """Issue 35, item 3: a failback's first step ("records in SF that never reached NYC")
    listed `heartbeats/0: 2 records`: aa's heartbeats are not the application's records."""
    from aa.failover.failback import orphans
    from aa.heartbeat.model import Heartbeat

    a, b = _dcs()
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"), partitions=1)
    hb = await create_topic(sf, unique_name("hb"), partitions=1)
    await produce(sf, topic, [Rec(b"k", b"v") for _ in range(3)])
    await produce(sf, hb, [Rec(a.encode(), Heartbeat(a, 1).encode()) for _ in range(2)])
    config = write_topology(
        tmp_path / "t.yaml",
        {a: sf, b: nyc},
        flows="full-mesh",
        topics=[topic],
        heartbeats={"enabled": True, "topic": hb},
    )
    left = await orphans(load_config(config), a, b)
    assert [(o.topic, o.records) for o in left] == [(topic, 3)], left
