"""Replication delay per flow: ``aa-ts`` (when the mirror produced the copy) minus the record's
timestamp (the origin's CreateTime, which the copy keeps). Copies without ``aa-ts`` cannot be
measured and are counted instead (:func:`unmeasured`).

Percentiles come from a histogram of log-scale delay buckets (:func:`delay_bucket`): counts
and the largest delay per bucket are plain, code-generated aggregations (``percentile_approx``
is an object aggregation Spark does not compile), and the percentiles are read off the
cumulative counts. The p-th percentile of n delays is the delay of nearest rank
``ceil(p * n)`` in ascending order, reported as the largest delay of its bucket: never below
the exact value and less than :data:`DELAY_STEP` of its magnitude above it (exact for delays
under ``1 / DELAY_STEP`` ms, where a bucket holds one integer)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pyspark.sql import Window
from pyspark.sql import functions as F

QUANTILES = (50, 90, 99)
"""The percentiles reported (p50, p90, p99), in percent."""
DELAY_STEP = 1 / 256
"""Relative width of a delay bucket (:func:`delay_bucket`): the percentiles' error bound."""


def _is_copy() -> Any:
    return (
        F.col("in_window")
        & F.col("has_prov")
        & F.col("prov_error").isNull()
        & (F.col("origin") != F.col("dc"))
    )


def _flow() -> Any:
    previous = F.when(F.size("path") >= 2, F.element_at("path", -2)).otherwise(F.col("origin"))
    return F.concat(previous, F.lit("->"), F.col("dc"))


def _copies(df: Any) -> Any:
    return df.filter(_is_copy()).withColumn("flow", _flow())


def unmeasured_flow() -> Any:
    """The flow of a copy :func:`unmeasured` counts (in the window, without ``aa-ts``), null
    for every other record: lets one aggregation of every record count them too."""
    return F.when(_is_copy() & F.col("mirrored_at").isNull(), _flow())


def is_measured() -> Any:
    """True for a copy :func:`measured` keeps (in the window, with ``aa-ts``)."""
    return _is_copy() & F.col("mirrored_at").isNotNull()


def measured_flow() -> Any:
    """The flow of a copy :func:`measured` keeps, null for every other record."""
    return F.when(is_measured(), _flow())


def measured(df: Any) -> Any:
    """Copies with ``aa-ts`` and their ``delay_ms``."""
    return (
        _copies(df)
        .filter(F.col("mirrored_at").isNotNull())
        .withColumn("delay_ms", F.col("mirrored_at") - F.col("ts"))
    )


def unmeasured(df: Any) -> Any:
    """Copies without ``aa-ts`` per flow (a mirror that does not stamp them, or MM2)."""
    return (
        _copies(df)
        .filter(F.col("mirrored_at").isNull())
        .groupBy("flow")
        .agg(F.count(F.lit(1)).alias("copies"))
    )


def delay_bucket(delay: Any) -> Any:
    """The log-scale bucket of a delay in ms (a long column): 0 for 0, else
    ``sign(d) * (floor(ln |d| / ln(1 + DELAY_STEP)) + 1)``, so a bucket holds the integers of
    ``[(1 + s)^(k-1), (1 + s)^k)`` (negated for negative delays: clocks of two DCs can
    disagree). Non-decreasing in the delay (``ln`` is monotonic), so buckets ordered by key are
    ordered by delay; at most one integer per bucket below ``1 / DELAY_STEP``."""
    magnitude = F.floor(F.log(F.abs(delay).cast("double")) / math.log1p(DELAY_STEP)) + 1
    return F.when(delay == 0, F.lit(0).cast("long")).otherwise(
        F.signum(delay).cast("long") * magnitude
    )


def percentiles(histogram: Any, *by: str, carry: tuple[str, ...] = ()) -> Any:
    """A delay histogram (``by`` columns, ``dbucket``, ``n`` delays, ``hi`` their largest) ->
    per ``by`` group: ``copies``, ``p50_ms``/``p90_ms``/``p99_ms`` (see the module's note) and
    ``max_ms``, and the sums of the ``carry`` columns. The histogram is small (groups x
    populated buckets): the window functions here sort a few rows, never the delays."""
    per = histogram.groupBy(*by, "dbucket").agg(
        F.sum("n").alias("n"), F.max("hi").alias("hi"), *(F.sum(c).alias(c) for c in carry)
    )
    upto = Window.partitionBy(*by).orderBy("dbucket").rowsBetween(Window.unboundedPreceding, 0)
    ranked = per.select(
        *by,
        "hi",
        *carry,
        F.sum("n").over(upto).alias("cum"),
        F.sum("n").over(Window.partitionBy(*by)).alias("total"),
    )

    def nearest_rank(pct: int) -> Any:
        # ceil(pct * total / 100) in integer arithmetic (no rounding of pct / 100)
        return F.expr(f"(total * {pct} + 99) div 100")

    return ranked.groupBy(*by).agg(
        F.max("total").alias("copies"),
        # the first bucket whose cumulative count reaches the rank: its ``hi`` is the least
        # of those buckets' (buckets are ordered by delay)
        *(
            F.min(F.when(F.col("cum") >= nearest_rank(p), F.col("hi"))).alias(f"p{p}_ms")
            for p in QUANTILES
        ),
        F.max("hi").alias("max_ms"),
        *(F.sum(c).alias(c) for c in carry),
    )


def histogram(df: Any, *by: str) -> Any:
    """Measured copies -> delay histogram rows per ``by`` and :func:`delay_bucket`."""
    return (
        measured(df)
        .groupBy(*by, delay_bucket(F.col("delay_ms")).alias("dbucket"))
        .agg(F.count(F.lit(1)).alias("n"), F.max("delay_ms").alias("hi"))
    )


def delay_by_flow(df: Any) -> Any:
    """Per flow and logical topic: copies, p50/p90/p99 and max delay in ms."""
    return percentiles(histogram(df, "flow", "ltopic"), "flow", "ltopic")


def delay_by_bucket() -> Callable[[Any], Any]:
    """Per flow and time bucket: the same percentiles (the report's chart)."""

    def transform(df: Any) -> Any:
        return percentiles(histogram(df, "flow", "bucket"), "flow", "bucket")

    return transform
