"""Repair leaves alone the records of topics whose schema ids a flow translates (issue 34):
re-publishing the origin's bytes would write the origin registry's ids into the target."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from aa.config import read_yaml
from spark_reconcile.plan import ReadPlan
from spark_reconcile.repair import translated_ids, without_translated

TOPOLOGY = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
flows:
  - SF->NYC:
      schemas:
        source: {url: "http://sf:8081"}
        target: {url: "http://nyc:8081"}
        values: [orders]
  - NYC->SF
  - SF->LON
"""


@pytest.mark.unit
def test_only_topics_a_flow_into_the_target_translates_are_left_alone() -> None:
    plan = ReadPlan(read_yaml(TOPOLOGY))
    pairs = [("NYC", "orders"), ("NYC", "users"), ("LON", "orders"), ("SF", "orders")]
    assert translated_ids(pairs, plan) == {("NYC", "orders")}


@pytest.mark.unit
@pytest.mark.spark
def test_repair_drops_the_rows_of_translated_topics_and_says_so(spark: Any) -> None:
    plan = ReadPlan(read_yaml(TOPOLOGY))
    rows = [("NYC", "orders", 1), ("NYC", "users", 2), ("LON", "orders", 3)]
    missing = spark.createDataFrame(rows, "target string, topic string, offset long")
    with capture_logs() as logs:
        kept = without_translated(missing, plan)
    assert sorted(r.offset for r in kept.collect()) == [2, 3]
    skipped = [e for e in logs if e["event"] == "reconcile.repair_skipped"]
    assert [(e["target"], e["topic"]) for e in skipped] == [("NYC", "orders")]
