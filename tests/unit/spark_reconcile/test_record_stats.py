"""The summary's one scan of the records (``spark_reconcile.record_stats``): compiled, and
the rows the separate queries give."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from spark_reconcile import findings
from tests.helpers.reconcile import (
    DCS,
    T0,
    Row,
    copy_of,
    mesh,
    normalised,
)

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def test_summary_scan_compiles_without_an_object_aggregation(spark: Any) -> None:
    """The summary's scan of every record is a code-generated hash aggregation:
    ``percentile_approx`` (an ``ObjectHashAggregate``, not whole-stage compiled) took 5.6 s
    of a 3 x 1M run; its delay percentiles now come from histogram counts."""
    from spark_reconcile.record_stats import aggregate

    df = normalised(spark, mesh(DCS, "orders", 2), mesh(DCS, "users", 2, events=True))
    plan = aggregate(df)._jdf.queryExecution().executedPlan().toString()
    assert "HashAggregate" in plan
    assert "ObjectHashAggregate" not in plan
    assert "SortAggregate" not in plan


def test_delay_counts_and_looped_from_one_scan_match_the_separate_queries(spark: Any) -> None:
    """The job's one scan of the records (delay per flow and per bucket, record counts,
    copies without aa-ts, looped rows) gives the rows the five separate queries give: two
    flows over two buckets with different lags, copies without aa-ts, local writes, a copy
    out of the window, a looped copy, a copy with broken provenance, two logical topics."""
    from pyspark.sql import functions as F

    from spark_reconcile.findings.delay import unmeasured
    from spark_reconcile.record_stats import record_stats

    sf_nyc = [
        copy_of(Row(b"k", b"v", (), T0 + 50_000 * i), "SF", "NYC", "orders", i, lag_ms=3 * i + 1)
        for i in range(4)
    ]
    lon_sf = [
        copy_of(Row(b"k", b"v", (), T0 + 70_000 * i), "LON", "SF", "users", i, lag_ms=5 + i)
        for i in range(3)
    ]
    no_ts = [replace(r, headers=r.headers[:-1]) for r in (sf_nyc[0], lon_sf[1])]
    late = copy_of(Row(b"k", b"v", (), T0 + 7_200_000), "SF", "NYC", "orders", 9, lag_ms=10)
    loop = copy_of(Row(b"k", b"v", (), T0 + 3), "SF", "NYC", "orders", 2)
    looped_copy = replace(
        loop,
        headers=(
            ("aa-origin", b"SF"),
            ("aa-path", b"SF,NYC,SF"),
            ("aa-src", b"SF/orders/0/2"),
            loop.headers[-1],
        ),
    )
    broken = Row(b"k", b"v", (("aa-origin", b"LON"), ("aa-path", b"LON,NYC")), T0 + 9)
    df = normalised(
        spark,
        {
            "NYC": [*sf_nyc, no_ts[0], late, broken],
            "SF": [Row(b"k", b"v", (), T0 + 1), looped_copy],
            "LON": [Row(b"k", b"v", (), T0 + 2)],
        },
        {"SF": [*lon_sf, no_ts[1]], "LON": [], "NYC": []},
    )
    stats = record_stats(df)

    def rows(frame: Any, *order: str) -> list[dict[str, Any]]:
        return [r.asDict() for r in frame.orderBy(*order).collect()]

    assert stats.delay == rows(df.transform(findings.delay_by_flow), "flow", "ltopic")
    assert len(stats.delay) == 2
    buckets = rows(df.transform(findings.delay_by_bucket()), "flow", "bucket")
    assert stats.delay_buckets == buckets
    assert len(buckets) == 6
    separate = (
        df.filter(F.col("in_window"))
        .groupBy("dc", "ltopic")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.count_if(~F.col("has_prov")).alias("without_provenance"),
            F.count_if(F.col("has_prov")).alias("copies"),
            F.count_if(F.col("has_prov") & F.col("mirrored_at").isNull()).alias(
                "copies_without_aa_ts"
            ),
        )
    )
    assert stats.records == rows(separate, "dc", "ltopic")
    assert len(stats.records) == 4
    assert stats.unmeasured == rows(df.transform(unmeasured), "flow")
    assert stats.unmeasured == [{"flow": "LON->SF", "copies": 1}, {"flow": "SF->NYC", "copies": 1}]
    assert stats.looped == df.transform(findings.looped).count() == 1
    assert df.filter(F.col("prov_error").isNotNull()).count() == 1
