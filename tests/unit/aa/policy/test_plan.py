"""`aa plan`: the plan built from topic listings, its warnings, and the CLI (offline and with an
unreachable DC)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from aa.cli.main import main
from aa.config import read_yaml
from aa.policy.plan import build_plan, render

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
DCS = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""


def test_plan_lists_copies_and_says_fewer_partitions_grow() -> None:
    t = read_yaml(DCS + "topics: [users]\nloop_prevention: prefix\n")
    listing = {
        "SF": {"users": 6, "NYC.users": 6, "LON.users": 6, "other": 1},
        "NYC": {"SF.users": 3},
        "LON": {},
    }
    plan = build_plan(t, listing, dc="NYC")
    assert [fp.flow.name for fp in plan.flows] == ["LON->NYC", "SF->NYC"]
    sf = plan.flows[1]
    assert [(c.source_topic, c.target_topic) for c in sf.copies or ()] == [("users", "SF.users")]
    assert ("NYC.users", "target-owned") in sf.skipped
    assert ("LON.users", "not-on-route") in sf.skipped
    assert any("NYC/SF.users grows from 3 to 6 partitions" in w for w in plan.warnings)
    text = render(plan)
    assert "users (6p) -> SF.users (3p)  grows to 6p" in text  # topic sync grows it
    assert "1 other topic(s) do not match" in text


def test_plan_names_the_include_pattern_that_matches_no_topic() -> None:
    """Issue 35, item 7: a pattern matching nothing (a typo: `userz`) was shown as "no matching
    topic in the source yet", without saying which pattern; with another pattern matching, not
    at all. Prefix mode matches the name without its DC prefix, as the mirror does."""
    t = read_yaml(DCS + "topics: [userz, 'orders\\..*']\n")
    listing = {"SF": {"users": 3, "orders.eu": 3}, "NYC": {}, "LON": {}}
    [lon, sf] = build_plan(t, listing, dc="NYC").flows
    assert sf.idle == ("userz",)
    assert lon.idle == ("userz", "orders\\..*")
    text = render(build_plan(t, listing, dc="NYC"))
    assert "! no topic in SF matches userz" in text, text
    prefixed = read_yaml(DCS + "topics: [users]\nloop_prevention: prefix\n")
    [_, sf] = build_plan(prefixed, {"SF": {"SF.users": 1}, "NYC": {}, "LON": {}}, dc="NYC").flows
    assert sf.idle == ()


def test_plan_warns_about_dcs_an_origin_never_reaches() -> None:
    t = read_yaml(DCS + "flows: {hub-and-spoke: {hub: NYC, direction: inbound}}\n")
    plan = build_plan(t)
    assert "events written in SF never reach LON: no route in the flow graph" in plan.warnings


def test_cli_offline(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["plan", "--config", str(EXAMPLES / "topology.yaml"), "--offline", "--dc", "SF"]) == 0
    )
    out = capsys.readouterr().out
    assert "flows (2):" in out
    assert "LON->SF" in out
    assert "NYC->SF" in out
    assert "subscription: ^" in out


def test_cli_names_the_unreachable_dc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = tmp_path / "t.yaml"
    cfg.write_text(f"datacenters:\n  SF: '127.0.0.1:{port}'\n  NYC: '127.0.0.1:{port}'\n")
    assert main(["plan", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert f"DC NYC at 127.0.0.1:{port} is unreachable" in err
    assert "--offline" in err


def test_cli_bad_config_and_unknown_dc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "t.yaml"
    cfg.write_text("datacenters: {SF: 'h:1', NYC: 'h:2'}\ndelivery: maybe\n")
    assert main(["plan", "--config", str(cfg), "--offline"]) == 2
    assert "t.yaml: delivery: invalid value 'maybe'" in capsys.readouterr().err
    assert (
        main(["plan", "--config", str(EXAMPLES / "topology.yaml"), "--offline", "--dc", "PAR"]) == 2
    )
    assert "--dc PAR: unknown DC" in capsys.readouterr().err


def test_plan_says_a_target_with_fewer_partitions_grows_in_every_mode() -> None:
    """Partition counts are the topology's (issue 29 item 5): with topic sync on, a target
    topic with fewer partitions than its source is grown, the DC's own topic in headers mode
    too; only with topic sync off do its records go by key hash."""
    listing = {"SF": {"users": 6}, "NYC": {"users": 3}, "LON": {"users": 6}}
    t = read_yaml(DCS + "topics: [users]\n")
    plan = build_plan(t, listing, dc="NYC")
    text = render(plan)
    assert "users (6p) -> users (3p)  grows to 6p" in text
    assert "by key hash" not in text
    assert any(
        "NYC/users grows from 3 to 6 partitions" in w and "only ever grow" in w
        for w in plan.warnings
    ), plan.warnings
    t = read_yaml(DCS + "topics: [users]\ntopic_sync: {enabled: false}\n")
    assert "users (6p) -> users (3p)  ! by key hash" in render(build_plan(t, listing, dc="NYC"))
