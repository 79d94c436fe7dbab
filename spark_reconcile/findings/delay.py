"""Replication delay per flow: ``aa-ts`` (when the mirror produced the copy) minus the record's
timestamp (the origin's CreateTime, which the copy keeps). Copies without ``aa-ts`` cannot be
measured and are counted instead (:func:`unmeasured`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

QUANTILES = (0.5, 0.9, 0.99)
ACCURACY = 10_000


def _is_copy() -> Any:
    from pyspark.sql import functions as F

    return (
        F.col("in_window")
        & F.col("has_prov")
        & F.col("prov_error").isNull()
        & (F.col("origin") != F.col("dc"))
    )


def _flow() -> Any:
    from pyspark.sql import functions as F

    previous = F.when(F.size("path") >= 2, F.element_at("path", -2)).otherwise(F.col("origin"))
    return F.concat(previous, F.lit("->"), F.col("dc"))


def _copies(df: Any) -> Any:
    return df.filter(_is_copy()).withColumn("flow", _flow())


def unmeasured_flow() -> Any:
    """The flow of a copy :func:`unmeasured` counts (in the window, without ``aa-ts``), null
    for every other record: lets one aggregation of every record count them too."""
    from pyspark.sql import functions as F

    return F.when(_is_copy() & F.col("mirrored_at").isNull(), _flow())


def measured_flow() -> Any:
    """The flow of a copy :func:`measured` keeps (in the window, with ``aa-ts``), null for
    every other record."""
    from pyspark.sql import functions as F

    return F.when(_is_copy() & F.col("mirrored_at").isNotNull(), _flow())


def measured(df: Any) -> Any:
    """Copies with ``aa-ts`` and their ``delay_ms``."""
    from pyspark.sql import functions as F

    return (
        _copies(df)
        .filter(F.col("mirrored_at").isNotNull())
        .withColumn("delay_ms", F.col("mirrored_at") - F.col("ts"))
    )


def unmeasured(df: Any) -> Any:
    """Copies without ``aa-ts`` per flow (a mirror that does not stamp them, or MM2)."""
    from pyspark.sql import functions as F

    return (
        _copies(df)
        .filter(F.col("mirrored_at").isNull())
        .groupBy("flow")
        .agg(F.count(F.lit(1)).alias("copies"))
    )


def _percentiles(group: Any) -> Any:
    from pyspark.sql import functions as F

    q = F.percentile_approx("delay_ms", list(QUANTILES), ACCURACY)
    return group.agg(
        F.count(F.lit(1)).alias("copies"),
        q.getItem(0).alias("p50_ms"),
        q.getItem(1).alias("p90_ms"),
        q.getItem(2).alias("p99_ms"),
        F.max("delay_ms").alias("max_ms"),
    )


def delay_by_flow(df: Any) -> Any:
    """Per flow and logical topic: copies, p50/p90/p99 and max delay in ms."""
    return _percentiles(measured(df).groupBy("flow", "ltopic"))


def delay_by_bucket() -> Callable[[Any], Any]:
    """Per flow and time bucket: the same percentiles (the report's chart)."""

    def transform(df: Any) -> Any:
        return _percentiles(measured(df).groupBy("flow", "bucket"))

    return transform
