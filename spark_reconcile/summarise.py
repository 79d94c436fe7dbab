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


RECORD_COUNTS = ("records", "without_provenance", "copies", "copies_without_aa_ts")
"""The summary's record counts per DC and logical topic (in the window): records, of which
local writes (no provenance headers: origin = this DC), copies, and copies without ``aa-ts``
(:func:`record_count_columns`)."""


def record_count_columns() -> list[Any]:
    """The aggregations of :data:`RECORD_COUNTS`, over the records in the window."""
    from pyspark.sql import functions as F

    return [
        F.count(F.lit(1)).alias("records"),
        F.sum(F.when(~F.col("has_prov"), 1).otherwise(0)).alias("without_provenance"),
        F.sum(F.when(F.col("has_prov"), 1).otherwise(0)).alias("copies"),
        F.sum(F.when(F.col("has_prov") & F.col("mirrored_at").isNull(), 1).otherwise(0)).alias(
            "copies_without_aa_ts"
        ),
    ]


def nulls_first(values: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """Sort key ordering like Spark's ascending ``orderBy``: nulls first."""
    return tuple((v is not None, v) for v in values)


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
