"""Small DataFrames of driver-side values, built from literals in the JVM.

``spark.createDataFrame`` of a Python list ships the rows through Python serialisation; the
job's small tables (expected flows, mirror offsets, truncated partitions) are instead one
``inline`` of literal structs over a one-row range: a plan of constants, no Python worker, no
pickling, and Spark's optimiser sees their size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.sql import functions as F


def _columns(schema: str) -> list[tuple[str, str]]:
    """``"a string, b long"`` -> ``[("a", "string"), ("b", "long")]`` (simple types only)."""
    out = []
    for part in schema.split(","):
        name, _, kind = part.strip().partition(" ")
        if not name or not kind.strip():
            raise ValueError(f"schema {schema!r}: each column is 'name type'")
        out.append((name, kind.strip()))
    return out


def literal_frame(spark: Any, rows: Iterable[Sequence[Any]], schema: str) -> Any:
    """A DataFrame of ``rows`` (tuples in ``schema`` order), typed by ``schema`` (DDL of simple
    types, e.g. ``"origin string, committed long"``). For a few rows: they are part of the
    query plan."""
    cols = _columns(schema)
    data = [tuple(r) for r in rows]
    for r in data:
        if len(r) != len(cols):
            raise ValueError(f"row {r!r} has {len(r)} values for the schema {schema!r}")
    if not data:
        return spark.range(0).select(*[F.lit(None).cast(kind).alias(name) for name, kind in cols])
    structs = [
        F.struct(*[F.lit(v).cast(k).alias(n) for v, (n, k) in zip(r, cols, strict=True)])
        for r in data
    ]
    return spark.range(1).select(F.inline(F.array(*structs)))
