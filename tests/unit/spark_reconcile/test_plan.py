"""The read plan (``spark_reconcile.plan``): topics read in each DC, the flows expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from aa.config import load_config
from spark_reconcile.plan import EventTopics, ReadPlan

pytestmark = pytest.mark.unit


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
