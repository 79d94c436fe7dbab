"""Chaperone-style completeness of topics that are not event-sourced: per origin, time bucket
and DC, how many of the origin's records the DC holds against how many the origin wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import functions as F


def completeness(expected: Any) -> Callable[[Any], Any]:
    """``expected``: ``origin``, ``ltopic``, ``target``. Rows: ``ltopic, origin, bucket, dc,
    origin_count, count, missing`` (``missing`` = origin's count minus the DC's, >= 0)."""

    def transform(df: Any) -> Any:
        rows = df.filter(
            F.col("in_window") & F.col("resolver").isNull() & F.col("prov_error").isNull()
        )
        counts = (
            rows.select("dc", "ltopic", "origin", "bucket", "rid")
            .distinct()
            .groupBy("ltopic", "origin", "bucket", "dc")
            .agg(F.count(F.lit(1)).alias("count"))
        )
        at_origin = counts.filter(F.col("dc") == F.col("origin")).select(
            "ltopic", "origin", "bucket", F.col("count").alias("origin_count")
        )
        targets = at_origin.join(expected, ["origin", "ltopic"]).withColumnRenamed("target", "dc")
        expected_rows = at_origin.withColumn("dc", F.col("origin")).unionByName(
            targets.filter(F.col("dc") != F.col("origin"))
        )
        return (
            expected_rows.join(counts, ["ltopic", "origin", "bucket", "dc"], "left")
            .withColumn("count", F.coalesce("count", F.lit(0)).cast("long"))
            .withColumn(
                "missing", F.greatest(F.col("origin_count") - F.col("count"), F.lit(0)).cast("long")
            )
            .select("ltopic", "origin", "bucket", "dc", "origin_count", "count", "missing")
        )

    return transform
