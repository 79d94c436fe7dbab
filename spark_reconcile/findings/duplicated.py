"""Duplicated: the same origin record (same ``rid``) more than once in one DC. A looped copy
is reported as looped, not also as a duplicate of the record it looped back to."""

from __future__ import annotations

from typing import Any

from spark_reconcile.findings.looped import is_looped


def duplicated(df: Any) -> Any:
    """One row per (DC, logical topic, rid) held more than once, with where the copies are."""
    from pyspark.sql import functions as F

    rows = df.filter(F.col("in_window") & F.col("prov_error").isNull() & ~is_looped())
    # count first (a fixed-width aggregation over every record); list the positions only of
    # the few records held more than once
    held = (
        rows.groupBy("dc", "ltopic", "rid")
        .agg(F.count(F.lit(1)).alias("copies"), F.min("ts").alias("ts"))
        .filter(F.col("copies") > 1)
    )
    at = (
        rows.join(held.select("dc", "ltopic", "rid"), ["dc", "ltopic", "rid"], "left_semi")
        .groupBy("dc", "ltopic", "rid")
        .agg(F.array_sort(F.collect_list(F.struct("topic", "partition", "offset"))).alias("at"))
    )
    return held.join(at, ["dc", "ltopic", "rid"])
