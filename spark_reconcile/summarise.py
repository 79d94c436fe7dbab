"""Small summaries of the findings, collected to the driver for summary.json and the report.

Only aggregates and bounded samples leave Spark: counts per DC/topic/flow/bucket and at most
:data:`SAMPLE` rows of each finding.
"""

from __future__ import annotations

from typing import Any

SAMPLE = 20


def _rows(df: Any, limit: int | None = None) -> list[dict[str, Any]]:
    if limit is not None:
        df = df.limit(limit)
    return [r.asDict(recursive=True) for r in df.collect()]


def counts_by(df: Any, *cols: str) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    return _rows(df.groupBy(*cols).agg(F.count(F.lit(1)).alias("count")).orderBy(*cols))


def record_counts(records: Any) -> list[dict[str, Any]]:
    """Per DC and logical topic: records in the window, of which local writes (no provenance
    headers: origin = this DC), copies, and copies without ``aa-ts``."""
    return record_and_unmeasured_counts(records)[0]


RECORD_COUNTS = ("records", "without_provenance", "copies", "copies_without_aa_ts")


def record_and_unmeasured_counts(
    records: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`record_counts` and the rows of :func:`~spark_reconcile.findings.delay.unmeasured`
    (``flow``, ``copies``, ordered by flow) from one aggregation of every record (each scan
    and query of the records costs planning, code generation and a pass over the file)."""
    from spark_reconcile.findings.delay import unmeasured_flow

    rows = _rows(_record_counts(records, unmeasured_flow().alias("unmeasured_flow")))
    per_topic: dict[tuple[str, str], dict[str, Any]] = {}
    per_flow: dict[str, int] = {}
    for r in rows:
        into = per_topic.setdefault(
            (r["dc"], r["ltopic"]),
            {"dc": r["dc"], "ltopic": r["ltopic"], **dict.fromkeys(RECORD_COUNTS, 0)},
        )
        for name in RECORD_COUNTS:
            into[name] += r[name]
        if r["unmeasured_flow"] is not None:
            per_flow[r["unmeasured_flow"]] = per_flow.get(r["unmeasured_flow"], 0) + r["records"]
    return (
        [per_topic[k] for k in sorted(per_topic, key=nulls_first)],
        [{"flow": f, "copies": n} for f, n in sorted(per_flow.items())],
    )


def nulls_first(values: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """Sort key ordering like Spark's ascending ``orderBy``: nulls first."""
    return tuple((v is not None, v) for v in values)


def _record_counts(records: Any, *by: Any) -> Any:
    from pyspark.sql import functions as F

    w = records.filter(F.col("in_window"))
    return w.groupBy("dc", "ltopic", *by).agg(
        F.count(F.lit(1)).alias("records"),
        F.sum(F.when(~F.col("has_prov"), 1).otherwise(0)).alias("without_provenance"),
        F.sum(F.when(F.col("has_prov"), 1).otherwise(0)).alias("copies"),
        F.sum(F.when(F.col("has_prov") & F.col("mirrored_at").isNull(), 1).otherwise(0)).alias(
            "copies_without_aa_ts"
        ),
    )


def sample(df: Any, *drop: str) -> list[dict[str, Any]]:
    """Up to :data:`SAMPLE` rows, binary columns shown as short text."""
    from pyspark.sql import functions as F

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
