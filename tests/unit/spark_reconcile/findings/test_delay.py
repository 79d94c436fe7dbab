"""Replication delay per flow (``spark_reconcile.findings.delay``): bucketed percentiles
within their bound, copies without ``aa-ts`` counted apart."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile import findings
from tests.helpers.reconcile import (
    T0,
    Row,
    copy_of,
    normalised,
)

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def test_delay_percentiles_per_flow(spark: Any) -> None:
    rows = [
        copy_of(Row(b"k", b"v", (), T0 + i), "SF", "NYC", "orders", i, lag_ms=10 * (i + 1))
        for i in range(10)
    ]
    no_ts = replace(rows[0], headers=rows[0].headers[:-1])
    df = normalised(spark, {"NYC": [*rows, no_ts]}, {})
    assertDataFrameEqual(
        df.transform(findings.delay_by_flow).select("flow", "copies", "p50_ms", "p99_ms", "max_ms"),
        [("SF->NYC", 10, 50, 100, 100)],
    )
    from spark_reconcile.findings.delay import unmeasured

    assertDataFrameEqual(df.transform(unmeasured), [("SF->NYC", 1)])


def test_delay_percentiles_of_long_and_negative_delays_stay_within_the_bucket_bound(
    spark: Any,
) -> None:
    """Delays from -40 s (clocks of two DCs disagree) to ~3 h: each percentile is the delay
    of nearest rank ceil(p * n), or the largest delay of its log-scale bucket: never below
    the exact value, less than DELAY_STEP of its magnitude above it, and always a delay that
    occurred (the job's one scan uses the same code: the next test compares them)."""
    import math

    from spark_reconcile.findings.delay import DELAY_STEP, QUANTILES

    lags = [-40_000, -3, 0, 5, 255, 257, *(7 + 997 * i * i for i in range(1, 104))]
    rows = [
        copy_of(Row(b"k", b"v", (), T0 + 10 * i), "SF", "NYC", "orders", i, lag_ms=lag)
        for i, lag in enumerate(lags)
    ]
    df = normalised(spark, {"NYC": rows}, {})
    (got,) = df.transform(findings.delay_by_flow).collect()
    ordered = sorted(lags)
    assert got.copies == len(lags)
    assert got.max_ms == ordered[-1]
    for pct in QUANTILES:
        exact = ordered[math.ceil(pct * len(lags) / 100) - 1]
        reported = got[f"p{pct}_ms"]
        assert reported in lags
        assert exact <= reported < exact + DELAY_STEP * abs(exact) + 1, pct
