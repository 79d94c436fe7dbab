"""The job's pure parts: window parsing, thresholds, the read plan, state file, report."""

from __future__ import annotations

from pathlib import Path

import pytest

from aa.config import load_config
from spark_reconcile.errors import ReconcileError
from spark_reconcile.plan import EventTopics, ReadPlan
from spark_reconcile.ranges import PartitionRange
from spark_reconcile.report import render_html
from spark_reconcile.state import RunState, load_state, save_state
from spark_reconcile.thresholds import Thresholds
from spark_reconcile.window import Window, parse_duration_ms, parse_time

pytestmark = pytest.mark.unit

NOW = 1_700_000_000_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("now", NOW),
        ("1699999999000", 1_699_999_999_000),
        ("24h", NOW - 86_400_000),
        ("-30m", NOW - 1_800_000),
        ("2023-11-14T22:13:20Z", NOW),
        ("2023-11-14T23:13:20+01:00", NOW),
    ],
)
def test_parse_time(text: str, ms: int) -> None:
    assert parse_time(text, now_ms=NOW) == ms


@pytest.mark.parametrize("text", ["yesterday", "24x", "", "2023-11-14T22:13:20"])
def test_parse_time_rejects_naming_the_option(text: str) -> None:
    with pytest.raises(ReconcileError, match="--until"):
        parse_time(text, now_ms=NOW, option="--until")


def test_window_and_durations() -> None:
    assert parse_duration_ms("10m") == 600_000
    assert parse_duration_ms("250") == 250
    with pytest.raises(ReconcileError, match="--slack"):
        parse_duration_ms("-5m")
    assert Window(1000, 2000, slack_ms=5000).read_from_ms == 0
    with pytest.raises(ReconcileError, match="after --since"):
        Window(2000, 2000)


def test_thresholds() -> None:
    t = Thresholds.parse("missing=2, delay_p99_ms=100")
    assert t.crossed({"missing": 2}, {"SF->NYC users": 100}) == []
    assert t.crossed({"missing": 3, "looped": 1}, {"SF->NYC users": 101}) == [
        "missing: 3 > 2",
        "looped: 1 > 0",
        "delay p99 of SF->NYC users: 101 ms > 100 ms",
    ]
    with pytest.raises(ReconcileError, match="NAME one of"):
        Thresholds.parse("lost=1")
    with pytest.raises(ReconcileError, match="not a number"):
        Thresholds.parse("missing=many")


def _plan(tmp_path: Path, extra: str) -> ReadPlan:
    path = tmp_path / "t.yaml"
    path.write_text(
        "datacenters:\n  SF: {bootstrap: 'a:1'}\n  NYC: {bootstrap: 'b:1'}\n"
        "  LON: {bootstrap: 'c:1'}\n" + extra
    )
    return ReadPlan(load_config(path), EventTopics.parse(["users", "carts.*=mv"]))


def test_plan_full_mesh_headers(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "flows: full-mesh\ntopics: {include: ['users', 'orders']}\n")
    reads = plan.reads("SF", ["users", "orders", "other", "__consumer_offsets", "heartbeats"])
    assert [(r.topic, r.logical) for r in reads] == [("orders", "orders"), ("users", "users")]
    expected = plan.expected(["users"])
    assert len(expected) == 6
    assert ("SF", "users", "NYC") in expected
    assert plan.topic_dcs(["users"]) == {"users": ["LON", "NYC", "SF"]}
    assert plan.events.resolver_for("users") == "lww"
    assert plan.events.resolver_for("carts.eu") == "mv"
    assert plan.events.resolver_for("orders") is None


def test_plan_hub_inbound_and_prefix_names(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "flows: {hub-and-spoke: {hub: NYC, direction: inbound}}\n"
        "loop_prevention: {mode: prefix}\ntopics: {include: ['users']}\n",
    )
    assert sorted(plan.expected(["users"])) == [("LON", "users", "NYC"), ("SF", "users", "NYC")]
    assert [(r.topic, r.logical) for r in plan.reads("NYC", ["SF.users", "LON.users"])] == [
        ("LON.users", "users"),
        ("SF.users", "users"),
    ]
    assert plan.physical_name("SF", "NYC", "users") == "SF.users"
    assert plan.physical_name("SF", "SF", "users") == "users"


def test_state_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s" / "state.json"
    assert load_state(path) is None
    ranges = [PartitionRange("SF", "users", "users", 1, 5, 9)]
    save_state(path, RunState.from_ranges(1, 2, ranges))
    state = load_state(path)
    assert state is not None
    assert (state.until_ms, state.end_offset("SF", "users", 1)) == (2, 9)
    assert state.end_offset("SF", "users", 0) is None
    path.write_text("{not json")
    with pytest.raises(ReconcileError, match="delete it and pass --since"):
        load_state(path)


def test_report_renders_charts_and_escapes() -> None:
    summary = {
        "window": {"since": "a", "until": "b"},
        "counts": {"missing": 1},
        "thresholds_crossed": ["missing: 1 > 0"],
        "charts": {
            "missing_per_bucket": {"1700000000000": 1},
            "delay_p99_per_bucket": {"SF->NYC": {"1700000000000": 12.0}},
        },
        "missing_by_flow": [{"origin": "SF", "target": "<NYC>", "count": 1}],
        "delay": [],
        "delay_unmeasured": [],
        "records": [],
        "completeness": [],
        "samples": {},
    }
    html = render_html(summary)
    assert html.count("<svg") == 2
    assert "&lt;NYC&gt;" in html
    assert "Thresholds crossed" in html


def test_unknown_resolver_exits_2_before_contacting_any_dc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aa.cli.main import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("datacenters:\n  SF: {bootstrap: '127.0.0.1:1'}\n  NYC: {bootstrap: 'b:1'}\n")
    args = ["reconcile", "--config", str(cfg), "--since", "1h", "--events", "users=nope"]
    assert main(args) == 2
    assert "--events users=nope: unknown resolver; use one of" in capsys.readouterr().err


def test_first_run_needs_since(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aa.cli.main import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("datacenters:\n  SF: {bootstrap: '127.0.0.1:1'}\n  NYC: {bootstrap: 'b:1'}\n")
    assert main(["reconcile", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "--since is required on the first run" in capsys.readouterr().err
