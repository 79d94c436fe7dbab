"""`aa status` (pure parts): metrics parsing, latency percentiles, per-DC rows, catch-up ETA."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from aa.cli import catchup
from aa.cli.catchup import CatchUp
from aa.cli.status_model import (
    FlowStatus,
    ProcessSnapshot,
    build,
    families_by_flow,
    flow_metrics,
    histogram_quantile,
    problems,
)
from aa.cli.status_view import eta as _eta
from aa.config import Topology, load_config
from aa.heartbeat.model import Heartbeat, HeartbeatView
from aa.lag import PartitionLag
from aa.observe.metrics import Metrics
from tests.helpers.cli import aa_cli
from tests.helpers.processes import write_topology
from tests.unit.aa.cli.test_errors import _dead_ports

pytestmark = pytest.mark.unit


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    buckets = [(0.1, 50.0), (1.0, 100.0), (float("inf"), 100.0)]
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.1)
    assert histogram_quantile(0.75, buckets) == pytest.approx(0.55)
    assert histogram_quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None


def test_flow_metrics_reads_aa_s_own_registry() -> None:
    m = Metrics()
    m.records.labels(source="SF", target="NYC", topic="t").inc(7)
    m.committed_lag.labels(source="SF", target="NYC", topic="t", partition="0").set(3)
    m.committed_lag.labels(source="SF", target="NYC", topic="t", partition="1").set(4)
    m.lag_seconds.labels(source="SF", target="NYC", topic="t", partition="0").set(2.5)
    m.restarts.labels(source="SF", target="NYC").inc()
    for _ in range(10):
        m.latency.labels(source="SF", target="NYC").observe(0.02)
    m.heartbeat_age.labels(local="NYC", remote="SF").set(1.5)
    got = flow_metrics(m.render().decode())["SF->NYC"]
    assert got["records"] == 7
    assert got["lag_records"] == 7
    assert got["lag_seconds"] == 2.5
    assert got["restarts"] == 1
    assert got["heartbeat_age_s"] == 1.5
    assert 0.01 < got["latency_p50_s"] <= 0.025


def test_catch_up_reads_from_its_own_collectors_what_the_page_says() -> None:
    m = Metrics()
    m.records.labels(source="SF", target="NYC", topic="t").inc(7)
    m.records.labels(source="SF", target="NYC", topic="hb").inc(3)
    m.records.labels(source="LON", target="NYC", topic="t").inc(2)
    m.committed_lag.labels(source="SF", target="NYC", topic="t", partition="0").set(3)
    m.committed_lag.labels(source="SF", target="NYC", topic="t", partition="1").set(4)
    m.lag_read_at.labels(source="SF", target="NYC").set(1_700_000_000.5)
    m.lag_seconds.labels(source="SF", target="NYC", topic="t", partition="0").set(2.5)

    def heartbeats(topic: str) -> bool:
        return topic == "hb"

    page = flow_metrics(m.render().decode(), heartbeats)
    own = families_by_flow(catchup._families(m), heartbeats)
    wanted = ("records", "lag_records", "lag_read_at")
    assert own == {f: {k: v for k, v in d.items() if k in wanted} for f, d in page.items() if d}
    assert own["SF->NYC"] == {"records": 7, "lag_records": 7, "lag_read_at": 1_700_000_000.5}


def test_one_screen_per_dc_joins_kafka_and_process_views(tmp_path: Path) -> None:
    topology = load_config(
        write_topology(
            tmp_path / "t.yaml",
            {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2", "LON": "127.0.0.1:3"},
            flows="full-mesh",
            heartbeats={"enabled": True, "interval_s": 1},
        )
    )
    view = HeartbeatView("NYC")
    view.add(Heartbeat("SF", 1_000).encode(), [], 1_500)
    proc = ProcessSnapshot(
        "http://127.0.0.1:9465",
        health={
            "flows": {
                "SF->NYC": {"state": "running", "restarts": 2, "last_error": None},
                "LON->NYC": {"state": "backoff", "restarts": 1, "last_error": "boom"},
            },
            "catch_up": {"SF->NYC": {"remaining": 10, "rate": 5.0, "eta_s": 2.0}},
        },
        metrics={"SF->NYC": {"latency_p50_s": 0.01, "latency_p99_s": 0.2}},
    )
    dcs = build(
        topology,
        {"SF": None, "NYC": None, "LON": "KafkaConnectionError: no broker answered"},
        {"SF->NYC": [PartitionLag("SF->NYC", "t", 0, 20, 10, 3.0)]},
        {"NYC": view},
        {"NYC": proc},
        now_ms=4_000,
    )
    by = {d.dc: d for d in dcs}
    assert [d.dc for d in dcs] == ["SF", "NYC", "LON"]
    assert not by["LON"].reachable
    rows = {f.flow: f for f in by["NYC"].flows}
    sf = rows["SF->NYC"]
    assert (sf.state, sf.lag_records, sf.lag_seconds, sf.restarts) == ("running", 10, 3.0, 2)
    assert (sf.heartbeat_age_s, sf.heartbeat_latency_s) == (3.0, 0.5)
    assert (sf.latency_p99_s, sf.rate, sf.eta_s) == (0.2, 5.0, 2.0)
    assert rows["LON->NYC"].last_error == "boom"
    assert {f.state for f in by["SF"].flows} >= {"no process", "LON down"}
    found = problems(dcs, stale_after_s=2.0)
    assert "DC LON unreachable" in found
    assert "flow LON->NYC backoff" in found
    assert "heartbeat SF->NYC 3s old" in found
    assert orjson.dumps([d.to_json() for d in dcs])


def test_catch_up_rate_and_eta_then_caught_up_once() -> None:
    t = CatchUp()
    assert t.sample(0.0, {"SF->NYC": {"records": 0.0, "lag_records": 1000.0}})[0]["rate"] is None
    [e] = t.sample(10.0, {"SF->NYC": {"records": 500.0, "lag_records": 500.0}})
    assert (e["event"], e["remaining"], e["rate"], e["eta_s"]) == ("catching_up", 500, 50.0, 10.0)
    assert t.sample(20.0, {"SF->NYC": {"records": 1000.0, "lag_records": 0.0}}) == [
        {"event": "caught_up", "flow": "SF->NYC"}
    ]
    assert t.sample(30.0, {"SF->NYC": {"records": 1000.0, "lag_records": 0.0}}) == []


async def test_status_with_every_dc_down_shows_them_and_exits_1(tmp_path: Path) -> None:
    sf, nyc = _dead_ports(2)
    config = write_topology(
        tmp_path / "t.yaml", {"SF": f"127.0.0.1:{sf}", "NYC": f"127.0.0.1:{nyc}"}, flows="full-mesh"
    )
    r = await aa_cli("status", "--config", str(config))
    assert r.code == 1, r
    assert "Traceback" not in r.err + r.out, r
    assert "Unclosed" not in r.err, r
    assert r.out.count("UNREACHABLE") == 2, r.out
    bad = await aa_cli("status", "--config", str(config), "--metrics", "XX=http://h:1")
    assert bad.code == 2, bad
    assert "--metrics XX: unknown DC" in bad.err, bad


def test_status_shows_a_long_last_error_whole_not_cut_mid_word(tmp_path: Path) -> None:
    """The table cut a flow's (and a background task's) last error at 60 characters, mid-word,
    and the rest was only in --json; it wraps in its column now."""
    from rich.console import Console

    from aa.cli.status_view import render

    topology = load_config(
        write_topology(tmp_path / "t.yaml", {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2"})
    )
    error = (
        "SF->NYC: NYC/orders refused the batch holding orders/0@17 (RecordTooLargeError); "
        "set on_error: dead-letter"
    )
    task_error = "GroupLoadInProgressError: the coordinator of group shipping is loading its state"
    proc = ProcessSnapshot(
        "http://127.0.0.1:9465",
        health={
            "flows": {"SF->NYC": {"state": "failed", "restarts": 0, "last_error": error}},
            "tasks": {"checkpoints": {"state": "backoff", "restarts": 1, "last_error": task_error}},
        },
        metrics={},
    )
    dcs = build(topology, {"SF": None, "NYC": None}, {}, {}, {"NYC": proc}, now_ms=0)
    console = Console(width=200, record=True, color_system=None)
    console.print(render(dcs, stale_after_s=30.0))
    shown = " ".join(console.export_text().replace("│", " ").split())
    for words in (error.split(), task_error.split()):
        assert all(w in shown for w in words), shown


def test_catch_up_during_a_source_outage_says_its_figures_are_stale() -> None:
    """With the source DC down the lag loop cannot read, so the committed-lag gauge keeps its
    last value: the catch-up line used to repeat it (``remaining=1000 rate=0.0``) every 10 s as
    if it were current. It must say how old the figure is, and give no ETA from it."""
    m = Metrics()
    labels = {"source": "SF", "target": "NYC", "topic": "orders", "partition": "0"}
    m.committed_lag.labels(**labels).set(1000)
    m.lag_read_at.labels(source="SF", target="NYC").set(1_000.0)
    m.records.labels(source="SF", target="NYC", topic="orders").inc(500)
    page = flow_metrics(m.render().decode())
    assert page["SF->NYC"]["lag_read_at"] == 1_000.0

    t = CatchUp(stale_after_s=35.0)
    [fresh] = t.sample(0.0, page, wall=1_010.0)
    assert "lag_stale_s" not in fresh
    [stale] = t.sample(10.0, page, wall=1_060.0)  # the last read is 60 s old
    assert (stale["remaining"], stale["lag_stale_s"], stale["eta_s"]) == (1000, 60.0, None)
    assert t.flows["SF->NYC"]["lag_stale_s"] == 60.0  # /healthz and `aa status` see it too
    row = FlowStatus("SF->NYC", "SF", "NYC", lag_records=1000, rate=50.0, lag_stale_s=60.0)
    assert _eta(row) == "no lag read for 60s"


def _mesh(tmp_path: Path) -> Topology:
    return load_config(
        write_topology(
            tmp_path / "t.yaml",
            {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2"},
            flows="full-mesh",
            heartbeats={"enabled": True, "interval_s": 1},
        )
    )


def test_status_exits_1_while_no_flow_is_known_to_run(tmp_path: Path) -> None:
    """Issue 35, item 4: with every DC up and no `aa run` anywhere, every row said `no process`
    and the exit code was 0, which the docs reserve for "every flow running". A flow counts as
    running when its process says so, or (no --metrics URL for its DC) when its heartbeat
    arrives fresh; anything else is named."""
    topology = _mesh(tmp_path)
    idle = build(topology, {"SF": None, "NYC": None}, {}, {}, {}, now_ms=0)
    found = problems(idle, stale_after_s=3.0)
    assert "flow SF->NYC: no process (no heartbeat; pass --metrics NYC=URL)" in found, found
    assert "flow NYC->SF: no process (no heartbeat; pass --metrics SF=URL)" in found, found

    view = HeartbeatView("NYC")
    view.add(Heartbeat("SF", 1_000).encode(), [], 1_500)
    beating = build(topology, {"SF": None, "NYC": None}, {}, {"NYC": view}, {}, now_ms=2_000)
    assert not [p for p in problems(beating, stale_after_s=3.0) if "SF->NYC" in p]

    silent = ProcessSnapshot("http://127.0.0.1:9", error="URLError: connection refused")
    unread = build(topology, {"SF": None, "NYC": None}, {}, {}, {"NYC": silent}, now_ms=0)
    found = problems(unread, stale_after_s=3.0)
    assert "aa run of NYC at http://127.0.0.1:9 does not answer" in " ".join(found), found


def test_status_table_fits_80_columns_without_breaking_a_cell(tmp_path: Path) -> None:
    """Issue 35, item 8: at 80 columns the table broke words in every cell (``no\\nproces
    s``). Cells stay whole; errors go on their own (wrapped) lines under the table."""
    from rich.console import Console

    from aa.cli.status_view import render

    topology = load_config(
        write_topology(
            tmp_path / "t.yaml",
            {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2", "LON": "127.0.0.1:3"},
            flows="full-mesh",
        )
    )
    error = "KafkaConnectionError: Unable to bootstrap from [('127.0.0.1', 22292)] " * 2
    proc = ProcessSnapshot(
        "http://127.0.0.1:9464",
        health={
            "flows": {
                "SF->NYC": {"state": "running", "restarts": 0, "last_error": None},
                "LON->NYC": {
                    "state": "backoff",
                    "waiting": "LON unreachable since 2026-11-27T23:28:26Z",
                    "restarts": 12,
                    "last_error": error,
                },
            },
            "catch_up": {"SF->NYC": {"remaining": 1000, "rate": 1234.5, "eta_s": 12.0}},
        },
        metrics={"SF->NYC": {"latency_p50_s": 0.012, "latency_p99_s": 1.2}},
    )
    reach = {"SF": None, "NYC": None, "LON": "KafkaConnectionError: no broker answered"}
    lag = {"SF->NYC": [PartitionLag("SF->NYC", "users", 0, 12_345, 11_345, 3.2)], "NYC->SF": []}
    dcs = build(topology, reach, lag, {}, {"NYC": proc}, now_ms=0)
    console = Console(width=80, record=True, color_system=None)
    console.print(render(dcs, stale_after_s=30.0))
    text = console.export_text()
    assert "…" not in text, text
    rows = [line for line in text.splitlines() if re.match(r"\w+->\w+  ", line)]
    assert len(rows) == 6, text  # one line per flow
    cells = ("no process", "LON down", "DC down", "caught up", "1,234/s ETA 12s", "12/1200ms")
    for cell in cells:
        assert cell in text, text
    assert re.search(r"^LON->NYC +waiting ", text, re.M), text  # the word; the rest below
    assert "LON->NYC waiting: LON unreachable since 2026-11-27T23:28:26Z" in text, text
    shown = " ".join(text.split())
    assert " ".join(error.split()) in shown, text  # the whole error, on its own lines


async def test_status_watch_into_a_file_shows_each_frame_and_ctrl_c_exits_130(
    tmp_path: Path,
) -> None:
    """Issue 35, items 4 and 8: `aa status --watch > file` wrote nothing until it exited, and
    Ctrl-C exited 0 where the docs say 130."""
    import signal

    from tests.helpers.kafka import eventually
    from tests.helpers.processes import AaProcess

    sf, nyc = _dead_ports(2)
    config = write_topology(
        tmp_path / "t.yaml", {"SF": f"127.0.0.1:{sf}", "NYC": f"127.0.0.1:{nyc}"}, flows="full-mesh"
    )
    watch = AaProcess(["status", "--config", str(config), "--watch", "0.1"], tmp_path / "w.log")
    try:
        await eventually(
            lambda: watch.output().count("UNREACHABLE") >= 4,
            timeout=60,
            message="two frames in the file while it runs",
        )
        watch.proc.send_signal(signal.SIGINT)
        # the stop is at once; the process's exit after it is CPU work (an interpreter with
        # aiokafka and rich loaded, a reader thread mid-read): 4-15 s measured with 30 busy
        # processes on 2 cores, longer beside brokers
        code = watch.proc.wait(120)
    finally:
        watch.stop()
    assert code == 130, watch.output()[-2000:]
    assert "Traceback" not in watch.output()


def test_an_idle_flow_copying_only_heartbeats_is_not_catching_up(tmp_path: Path) -> None:
    """Issue 35, item 3: heartbeats (one a second) made every idle flow `catching_up` with
    `1/s, ETA 2s`, flipping to `caught_up` every 10-20 s. Records and lag describe the user's
    data; the heartbeat topic's series are left out (in prefix mode, its prefixed copy too)."""
    from aa.lag import holds_heartbeats

    holds = holds_heartbeats(_mesh(tmp_path))
    m = Metrics()
    labels = {"source": "SF", "target": "NYC"}
    m.committed_lag.labels(**labels, topic="users", partition="0").set(0)
    tracker = CatchUp()
    events = []
    for second in range(0, 40, 10):
        m.records.labels(**labels, topic="heartbeats").inc(10)
        in_flight = 3 if second % 20 else 0  # a few heartbeats not committed yet, now and then
        m.committed_lag.labels(**labels, topic="heartbeats", partition="0").set(in_flight)
        page = flow_metrics(m.render().decode(), holds)
        events += tracker.sample(float(second), page)
    assert events == [], events
    assert page["SF->NYC"].get("records", 0.0) == 0.0, page

    prefix = load_config(
        write_topology(
            tmp_path / "p.yaml",
            {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2"},
            loop_prevention={"mode": "prefix", "style": "rename"},
            heartbeats={"enabled": True},
        )
    )
    in_prefix = holds_heartbeats(prefix)
    assert in_prefix("heartbeats")
    assert in_prefix("NYC.heartbeats")
    assert not in_prefix("users")


def test_status_says_a_flow_waits_for_its_source_and_shows_paused_and_failed_topics(
    tmp_path: Path,
) -> None:
    """While SF is down `aa status` in NYC showed `SF->NYC running` with lag `-`; now the
    flow says what it waits for, and paused and failed topics are shown with their reasons."""
    topology = load_config(
        write_topology(
            tmp_path / "t.yaml",
            {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2", "LON": "127.0.0.1:3"},
            flows="full-mesh",
        )
    )
    failure = {"reason": "record-too-large", "partition": 0, "offset": 41, "attempts": 2}
    proc = ProcessSnapshot(
        "http://127.0.0.1:9465",
        health={
            "flows": {
                "SF->NYC": {
                    "state": "backoff",
                    "restarts": 3,
                    "last_error": "KafkaConnectionError: Unable to bootstrap",
                    "waiting": "SF unreachable since 2026-11-27T20:01:02Z",
                },
                "LON->NYC": {
                    "state": "running",
                    "restarts": 0,
                    "last_error": None,
                    "paused": ["LON->NYC/users"],
                    "failed_topics": {"big": failure},
                },
            }
        },
    )
    dcs = build(topology, {"SF": "down", "NYC": None, "LON": None}, {}, {}, {"NYC": proc}, now_ms=0)
    rows = {f.flow: f for d in dcs if d.dc == "NYC" for f in d.flows}
    assert rows["SF->NYC"].state == "waiting: SF unreachable since 2026-11-27T20:01:02Z"
    assert rows["LON->NYC"].paused == ["LON->NYC/users"]
    assert rows["LON->NYC"].failed_topics == {
        "big": "record-too-large (partition 0, offset 41, 2 tries)"
    }
    found = problems(dcs, stale_after_s=3.0)
    assert (
        "flow LON->NYC: topic big failed: record-too-large (partition 0, offset 41, 2 tries)"
        in found
    )
