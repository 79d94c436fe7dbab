"""Divergent keys (``spark_reconcile.findings.divergent``): the job's suspect keys are the
digests' keys, from a regrouping of only the unsettled events."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile import findings
from spark_reconcile.findings.divergent import suspect_keys
from spark_reconcile.findings.presence import ids
from spark_reconcile.source import raw_schema
from tests.helpers.reconcile import (
    DCS,
    T0,
    Row,
    event_value,
    expected_flows,
    mesh,
    normalised,
    raw_rows,
    suspect_events,
    values_from,
)
from tests.unit.spark_reconcile.test_copies import FLOWS, _job_path

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def _divergent_both_ways(spark: Any, df: Any) -> dict[str, Any]:
    """Divergent alone (the digests' suspect keys) and as the job runs it (the suspect keys
    from presence's per-id aggregation, their events picked with their values)."""
    flows = [tuple(r) for r in expected_flows(spark).collect()]
    suspect = df.transform(ids(DCS, flows)).transform(suspect_keys({"users": DCS}, DCS))
    return {
        "divergent": df.transform(findings.divergent({"users": DCS}, values_from(df))),
        "divergent_by_ids": df.transform(
            findings.divergent({"users": DCS}, None, suspect_events=suspect_events(df, suspect))
        ),
    }


def test_divergent_suspects_from_the_presence_aggregation_match_the_digests(spark: Any) -> None:
    """The job takes divergent's suspect keys from presence's per-id aggregation (one shuffle
    of every record for missing, duplicated and divergent); the findings are the digests'."""
    users = mesh(DCS, "users", 8, events=True)
    # NYC lacks LON's event 5, k1's LWW winner: k1 differs there by an absent event
    at = next(n for n, r in enumerate(users["NYC"]) if ("aa-src", b"LON/users/0/5") in r.headers)
    users["NYC"].pop(at)
    # k9 is only in SF (its copies never left): absent from NYC and LON
    users["SF"].append(Row(b"k9", event_value("k9", (T0 + 50_000, 0, "SF"), {"i": 9}), (), T0))
    df = normalised(spark, mesh(DCS, "orders", 2), users)
    out = _divergent_both_ways(spark, df)
    for name in ("divergent", "divergent_by_ids"):
        rows = sorted((r.key, r.absent_in, r.reason) for r in out[name].collect())
        assert rows == [
            ("k1", [], "absent events"),
            ("k9", ["LON", "NYC"], "absent events"),
        ], name


@pytest.mark.parametrize("users_dcs", [DCS, ("NYC", "SF")])
def test_suspect_keys_from_the_unsettled_events_are_those_of_every_event(
    spark: Any, tmp_path: Path, users_dcs: tuple[str, ...]
) -> None:
    """Grouping only the unsettled events (not held by exactly the topic's DCs, or copies
    that differ) finds the suspect keys grouping every event finds; with a DC holding events
    of a topic it should not hold (LON, second case), every event is grouped."""
    from spark_reconcile.findings.divergent import suspect_keys_written

    users = mesh(DCS, "users", 8, events=True)
    at = next(n for n, r in enumerate(users["NYC"]) if b'"by":"SF","i":1}' in (r.value or b""))
    users["NYC"].pop(at)  # k1: NYC lacks SF's event 1
    at = next(n for n, r in enumerate(users["LON"]) if b'"by":"SF","i":2}' in (r.value or b""))
    forged = (users["LON"][at].value or b"").replace(b'"i":2}', b'"i":7}')
    users["LON"][at] = replace(users["LON"][at], value=forged)  # k2: a forged copy
    job = _job_path(spark.createDataFrame(raw_rows("users", users), raw_schema()))
    per_id = job.transform(ids(DCS, FLOWS))
    topic_dcs = {"users": users_dcs}

    found = suspect_keys_written(per_id, topic_dcs, DCS, tmp_path)

    assertDataFrameEqual(found, per_id.transform(suspect_keys(topic_dcs, DCS)))
    assert found.count() == 2  # k1 and k2
    assert (tmp_path / "suspects").exists() == (users_dcs != DCS)
