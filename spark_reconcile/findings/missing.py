"""Missing: a record present at its origin, absent from a DC that should hold it.

Absent is not always missing. A record whose copy was refused by retention is *expired* (the
DC's log start moved past the time of the record), and a record younger than the grace period
that the mirror feeding the DC has not yet moved past (its committed source offset) is still
*in flight*: the copy is on its way. Only the rest is *missing* (and repaired).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.findings.presence import Flagged, flag, is_origin_record

MISSING_COLUMNS = (
    "ltopic",
    "origin",
    "target",
    "parent",
    "rid",
    "src",
    "topic",
    "partition",
    "offset",
    "ts",
    "bucket",
    "key_hash",
    "status",
)
MISSING, IN_FLIGHT, EXPIRED = "missing", "in flight", "expired"


def absent(
    expected: Any,
    *,
    due_ms: int | None = None,
    mirrored: Any = None,
    horizons: Any = None,
    flagged: Flagged | None = None,
) -> Callable[[Any], Any]:
    """Every origin record absent from a DC that should hold it, with its ``status``.

    ``expected``: ``origin, ltopic, target`` (and ``parent``, the DC ``target`` receives the
    origin's records from; the origin when absent). A copy that is present but undecodable
    counts as present (it is reported as malformed). ``due_ms``: records older than this are
    due everywhere (none is in flight when ``None``). ``mirrored``: ``source, target, topic,
    partition, committed`` (the mirror's committed source offsets). ``horizons``: ``dc,
    ltopic, partition, horizon_ts`` (the time of the first record a truncated log still
    holds). ``flagged``: the run's :func:`~spark_reconcile.findings.presence.flag` of the same
    records (computed here when not given).

    Which DCs hold each record id comes from one aggregation (:mod:`.presence`); only the
    origin records of ids some DC lacks are joined with the expected targets."""

    def transform(df: Any) -> Any:
        exp = (
            expected
            if "parent" in expected.columns
            else expected.withColumn("parent", F.col("origin"))
        )
        found = flagged
        if found is None:
            flows = [tuple(r) for r in exp.select("origin", "ltopic", "target").collect()]
            found = flag(df, (), flows)
        lacking = found.rows.filter(F.col("lacking")).select("ltopic", "rid", "held")
        wanted = (
            df.filter(is_origin_record())
            .join(lacking, ["ltopic", "rid"])
            .join(F.broadcast(exp), ["origin", "ltopic"])
            .filter((F.col("target") != F.col("origin")) & ~found.holds("target"))
        )
        # an undecodable copy still names its origin record in aa-src: present, not missing
        undecodable = df.filter(F.col("has_prov") & F.col("event_error").isNotNull()).select(
            F.col("dc").alias("target"), "ltopic", "src"
        )
        gone = wanted.join(undecodable, ["target", "ltopic", "src"], "left_anti")
        expired = F.lit(False)
        if horizons is not None:
            h = horizons.select(F.col("dc").alias("target"), "ltopic", "partition", "horizon_ts")
            gone = gone.join(F.broadcast(h), ["target", "ltopic", "partition"], "left")
            expired = F.coalesce(F.col("ts") < F.col("horizon_ts"), F.lit(False))
        past = F.lit(False)
        if mirrored is not None:
            # where the feeding mirror reads the record: the origin's own row, or the
            # parent's copy of it
            at = (
                df.filter(F.col("prov_error").isNull())
                .select(
                    F.col("dc").alias("parent"),
                    "ltopic",
                    "rid",
                    F.col("topic").alias("p_topic"),
                    F.col("partition").alias("p_partition"),
                    F.col("offset").alias("p_offset"),
                )
                # only the absent records' rows (few): a whole-table dropDuplicates would
                # be a sort-based aggregation over every record
                .join(
                    gone.select("parent", "ltopic", "rid"), ["parent", "ltopic", "rid"], "left_semi"
                )
                .dropDuplicates(["parent", "ltopic", "rid"])
            )
            m = mirrored.select(
                F.col("source").alias("parent"),
                "target",
                F.col("topic").alias("p_topic"),
                F.col("partition").alias("p_partition"),
                "committed",
            )
            gone = gone.join(at, ["parent", "ltopic", "rid"], "left").join(
                F.broadcast(m), ["parent", "target", "p_topic", "p_partition"], "left"
            )
            past = F.coalesce(F.col("committed") > F.col("p_offset"), F.lit(False))
        due = F.lit(True) if due_ms is None else (F.col("ts") < F.lit(due_ms)) | past
        status = (
            F.when(expired, F.lit(EXPIRED)).when(due, F.lit(MISSING)).otherwise(F.lit(IN_FLIGHT))
        )
        return gone.withColumn("status", status).select(*MISSING_COLUMNS)

    return transform


def missing(expected: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """The rows of :func:`absent` that are really missing: due, not expired."""

    def transform(df: Any) -> Any:
        return df.transform(absent(expected, **kwargs)).filter(F.col("status") == MISSING)

    return transform
