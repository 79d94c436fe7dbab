"""Small summaries of the findings, collected to the driver for summary.json and the report.

Only aggregates and bounded samples leave Spark: counts per DC/topic/flow/bucket and at most
:data:`SAMPLE` rows of each finding.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pyspark.sql import functions as F

SAMPLE = 20


def _rows(df: Any, limit: int | None = None) -> list[dict[str, Any]]:
    if limit is not None:
        df = df.limit(limit)
    return [r.asDict(recursive=True) for r in df.collect()]


def counts_by(df: Any, *cols: str) -> list[dict[str, Any]]:
    return _rows(df.groupBy(*cols).agg(F.count(F.lit(1)).alias("count")).orderBy(*cols))


RECORD_COUNTS = ("records", "without_provenance", "copies", "copies_without_aa_ts")
"""The summary's record counts per DC and logical topic (in the window): records, of which
local writes (no provenance headers: origin = this DC), copies, and copies without ``aa-ts``
(:func:`record_count_columns`)."""


def record_count_columns(weight: Any = None) -> list[Any]:
    """The aggregations of :data:`RECORD_COUNTS`, over the records in the window (each row
    counted ``weight`` times: a column of rows it stands for; once by default)."""
    w = F.lit(1) if weight is None else weight
    return [
        F.sum(w).alias("records") if weight is not None else F.count(F.lit(1)).alias("records"),
        F.sum(F.when(~F.col("has_prov"), w).otherwise(0)).alias("without_provenance"),
        F.sum(F.when(F.col("has_prov"), w).otherwise(0)).alias("copies"),
        F.sum(F.when(F.col("has_prov") & F.col("mirrored_at").isNull(), w).otherwise(0)).alias(
            "copies_without_aa_ts"
        ),
    ]


def nulls_first(values: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """Sort key ordering like Spark's ascending ``orderBy``: nulls first."""
    return tuple((v is not None, v) for v in values)


def sample(df: Any, *drop: str) -> list[dict[str, Any]]:
    """Up to :data:`SAMPLE` rows, binary columns shown as short text."""
    cols = [c for c in df.columns if c not in drop]
    out = df.select(*cols)
    for name, kind in out.dtypes:
        if kind == "binary":
            out = out.withColumn(name, F.substring(F.col(name).cast("string"), 1, 64))
    return _rows(out, SAMPLE)


def to_jsonable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in r.items()} for r in rows]


def _plain(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "backslashreplace")
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def absent_by_flow(absent: Any) -> dict[str, list[dict[str, Any]]]:
    """Per status of ``absent`` (in flight, expired...): records per flow and topic."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in counts_by(absent, "status", "origin", "target", "ltopic"):
        out.setdefault(r["status"], []).append(
            {**{k: r[k] for k in ("origin", "target", "ltopic")}, "records": r["count"]}
        )
    return out


def missing_by_flow_and_bucket(
    missing: Any,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Missing records per flow and topic (ordered by origin, target, topic) and per time
    bucket, from one aggregation."""
    per_flow: dict[tuple[Any, ...], int] = {}
    per_bucket: dict[Any, int] = {}
    for r in counts_by(missing, "origin", "target", "ltopic", "bucket"):
        flow = (r["origin"], r["target"], r["ltopic"])
        per_flow[flow] = per_flow.get(flow, 0) + r["count"]
        per_bucket[r["bucket"]] = per_bucket.get(r["bucket"], 0) + r["count"]
    return (
        [
            {"origin": o, "target": t, "ltopic": lt, "count": per_flow[(o, t, lt)]}
            for o, t, lt in sorted(per_flow, key=nulls_first)
        ],
        {str(b): per_bucket[b] for b in sorted(per_bucket, key=lambda b: (b is not None, b))},
    )


def counts_by_completeness(df: Any) -> list[dict[str, Any]]:
    """Completeness totals per topic, origin and DC (the per-bucket rows are in Parquet)."""
    return [
        r.asDict()
        for r in df.groupBy("ltopic", "origin", "dc")
        .agg(
            F.sum("origin_count").alias("origin_count"),
            F.sum("count").alias("count"),
            F.sum("missing").alias("missing"),
        )
        .orderBy("ltopic", "origin", "dc")
        .collect()
    ]


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
