"""Every finding on small DataFrames: a clean full mesh gives nothing; each injected fault is
found by its finding and by no other."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile import findings
from spark_reconcile.findings.divergent import suspect_keys
from spark_reconcile.findings.presence import flag, ids
from tests.helpers.reconcile import (
    DCS,
    T0,
    Row,
    copy_of,
    expected_flows,
    mesh,
    normalised,
    suspect_events,
    values_from,
)

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def _all(spark: Any, df: Any) -> dict[str, Any]:
    expected = expected_flows(spark)
    # the job's path: one presence aggregation shared by missing and duplicated
    flows = [tuple(r) for r in expected.collect()]
    flagged = flag(df, DCS, flows)
    # the job's path for divergent: suspect keys from the same per-id aggregation
    suspect = df.transform(ids(DCS, flows)).transform(suspect_keys({"users": DCS}, DCS))
    return {
        "missing": df.transform(findings.missing(expected, flagged=flagged)),
        "missing_alone": df.transform(findings.missing(expected)),
        "duplicated": findings.duplicated(df, flagged),
        "duplicated_alone": findings.duplicated(df),
        "looped": df.transform(findings.looped),
        "malformed": df.transform(findings.malformed),
        "divergent": df.transform(findings.divergent({"users": DCS}, values_from(df))),
        # the job's path: the suspect keys' events picked with their values
        "divergent_by_ids": df.transform(
            findings.divergent({"users": DCS}, None, suspect_events=suspect_events(df, suspect))
        ),
        "incomplete": df.transform(findings.completeness(expected)).filter("missing > 0"),
    }


def test_clean_full_mesh_has_no_findings(spark: Any) -> None:
    df = normalised(spark, mesh(DCS, "orders", 3), mesh(DCS, "users", 4, events=True))
    for name, out in _all(spark, df).items():
        assert out.count() == 0, name
    delay = df.transform(findings.delay_by_flow)
    assert delay.count() == 6 * 2
    assert {r.p99_ms for r in delay.collect()} == {7}
    comp = df.transform(findings.completeness(expected_flows(spark)))
    assert comp.groupBy().sum("origin_count", "count").first() == (27, 27)


def test_each_fault_is_found_by_its_finding_only(spark: Any) -> None:
    orders = mesh(DCS, "orders", 3)
    users = mesh(DCS, "users", 4, events=True)
    # missing: NYC lacks SF's orders record 1 (its copy sits at NYC offset 4)
    dropped = orders["NYC"].pop(4)
    assert b"SF/orders/0/1" in dict(dropped.headers).values()
    # duplicated: LON holds NYC's orders record 0 twice
    orders["LON"].append(orders["LON"][6])
    # looped: a record of SF that went SF -> NYC -> SF (appended to SF)
    loop = copy_of(orders["SF"][2], "SF", "NYC", "orders", 2)
    orders["SF"].append(
        replace(
            loop,
            headers=(
                *loop.headers[:1],
                ("aa-origin", b"SF"),
                ("aa-path", b"SF,NYC,SF"),
                ("aa-src", b"SF/orders/0/2"),
            ),
        )
    )
    # divergent: SF's copy of LON's event 1 (k1's LWW winner) has another payload (same id,
    # so nothing is missing)
    i = next(n for n, r in enumerate(users["SF"]) if b'"by":"LON","i":1}' in (r.value or b""))
    altered = (users["SF"][i].value or b"").replace(b'"by":"LON","i":1}', b'"by":"LON","i":9}')
    users["SF"][i] = replace(users["SF"][i], value=altered)
    # malformed: a bad aa-src in NYC, a truncated event in SF
    orders["NYC"].append(
        Row(
            b"k",
            b"v",
            (("aa-origin", b"LON"), ("aa-path", b"LON,NYC"), ("aa-src", b"LON/orders/zero")),
            T0,
        )
    )
    bad = Row(b"k", b'{"id": "x", "ke', (), T0)
    users["SF"].append(bad)  # written in SF and copied as bytes by the mirror
    users["NYC"].append(copy_of(bad, "SF", "NYC", "users", len(users["SF"]) - 1))
    users["LON"].append(copy_of(bad, "SF", "LON", "users", len(users["SF"]) - 1))

    out = _all(spark, normalised(spark, orders, users))
    for name in ("missing", "missing_alone"):
        assertDataFrameEqual(
            out[name].select("ltopic", "origin", "target", "rid"),
            [("orders", "SF", "NYC", "SF/orders/0/1")],
        )
    for name in ("duplicated", "duplicated_alone"):
        assertDataFrameEqual(
            out[name].select("dc", "ltopic", "rid", "copies"),
            [("LON", "orders", "NYC/orders/0/0", 2)],
        )
    assertDataFrameEqual(
        out["looped"].select("dc", "ltopic", "rid", "path"),
        [("SF", "orders", "SF/orders/0/2", "SF,NYC,SF")],
    )
    assertDataFrameEqual(
        out["malformed"].select("dc", "ltopic", "kind"),
        [("NYC", "orders", "provenance")] + [(dc, "users", "event") for dc in DCS],
    )
    for name in ("divergent", "divergent_by_ids"):
        div = out[name].collect()
        assert [(r.ltopic, r.key, r.absent_in, r.reason) for r in div] == [
            ("users", "k1", [], "conflicting copies")
        ], name
        assert div[0].hashes["LON"] == div[0].hashes["NYC"] != div[0].hashes["SF"]
    assertDataFrameEqual(
        out["incomplete"].select("ltopic", "origin", "dc", "missing"),
        [("orders", "SF", "NYC", 1)],
    )


def test_records_without_provenance_are_local_writes(spark: Any) -> None:
    """A record with no aa-* headers is NYC's own write: NYC is its origin, and SF and LON are
    expected to hold it (so it is missing there); nothing crashes."""
    orders = {"SF": [], "NYC": [Row(b"k", b"v", (), T0 + 5)], "LON": []}
    df = normalised(spark, orders, {"SF": [], "NYC": [], "LON": []})
    assertDataFrameEqual(
        df.select("dc", "origin", "has_prov", "rid", "path"),
        [("NYC", "NYC", False, "NYC/orders/0/0", ["NYC"])],
    )
    missing = df.transform(findings.missing(expected_flows(spark)))
    assertDataFrameEqual(
        missing.select("target", "rid"), [("LON", "NYC/orders/0/0"), ("SF", "NYC/orders/0/0")]
    )
