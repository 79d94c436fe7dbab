"""The run's scope (``spark_reconcile.stages.scope``): only the DCs the probe reached take part
in the flows and topics compared; the summary still names every DC."""

from __future__ import annotations

from pathlib import Path

import pytest

from aa.config import load_config
from spark_reconcile.plan import EventTopics, ReadPlan
from spark_reconcile.probe import Probe
from spark_reconcile.ranges import PartitionRange
from spark_reconcile.stages.scope import RunScope

pytestmark = pytest.mark.unit


def test_a_dc_the_probe_did_not_reach_is_in_no_flow_and_no_topic(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "datacenters:\n  SF: {bootstrap: 'a:1'}\n  NYC: {bootstrap: 'b:1'}\n"
        "  LON: {bootstrap: 'c:1'}\nflows: full-mesh\ntopics: {include: ['users', 'orders']}\n"
    )
    plan = ReadPlan(load_config(path), EventTopics.parse(["users"]))
    probed = Probe(
        {
            dc: [PartitionRange(dc, t, t, 0, 0, 5) for t in ("orders", "users")]
            for dc in ("SF", "NYC")
        },
        unreachable={"LON": "DC LON is unreachable"},
    )

    scope = RunScope.of(plan, probed)

    assert scope.dcs == ("SF", "NYC", "LON")
    assert scope.checked == ["NYC", "SF"]
    assert scope.logical == ["orders", "users"]
    assert scope.resolvers == {"users": "lww"}
    assert sorted(scope.expected) == [
        (o, t, d) for o, d in (("NYC", "SF"), ("SF", "NYC")) for t in ("orders", "users")
    ]
    assert all(parent == origin for origin, _, _, parent in scope.flows)  # full mesh: direct
    assert scope.topic_dcs == {"users": ["NYC", "SF"]}
    assert scope.flag_dcs == ("NYC", "SF")
    assert scope.physical == {"orders": "orders", "users": "users"}
