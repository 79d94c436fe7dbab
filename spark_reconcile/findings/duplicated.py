"""Duplicated: the same origin record (same ``rid``) more than once in one DC. A looped copy
is reported as looped, not also as a duplicate of the record it looped back to."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.findings.presence import Flagged, counts_as_copy


def duplicated(df: Any, flagged: Flagged | None = None) -> Any:
    """One row per (DC, logical topic, rid) held more than once, with where the copies are.

    Counted first on a 64-bit hash of (DC, logical topic, rid): a fixed-width key keeps the
    aggregation over every record cheap and its memory per task bounded (string keys made it
    the costliest finding, and the aggregation that ran out of heap at 2M events per DC).
    A hash held more than once is only a candidate: the few rows behind candidates are
    grouped again by their exact key, so a hash collision never reports a duplicate.
    ``flagged``: the run's :func:`~spark_reconcile.findings.presence.flag` of the same records;
    its ``maybe_duplicated`` ids are the candidates then (no aggregation of its own)."""
    rows = df.filter(counts_as_copy())
    if flagged is not None:
        candidates = flagged.rows.filter(F.col("maybe_duplicated")).select("ltopic", "rid")
        few = rows.join(candidates, ["ltopic", "rid"], "left_semi")
    else:
        digest = F.xxhash64("dc", "ltopic", "rid").alias("_h")
        counts = rows.select(digest).groupBy("_h").agg(F.count(F.lit(1)).alias("n"))
        candidates = counts.filter("n > 1")
        few = rows.withColumn("_h", digest).join(candidates.select("_h"), "_h", "left_semi")
    # few rows: one aggregation lists their positions too
    return (
        few.groupBy("dc", "ltopic", "rid")
        .agg(
            F.count(F.lit(1)).alias("copies"),
            F.min("ts").alias("ts"),
            F.array_sort(F.collect_list(F.struct("topic", "partition", "offset"))).alias("at"),
        )
        .filter(F.col("copies") > 1)
    )
