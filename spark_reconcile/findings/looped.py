"""Looped: a record whose path names a DC twice, or that came back into its origin DC."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F


def is_looped() -> Any:
    """True for a copy that has looped (a second copy of it is that loop, not a duplicate)."""
    return F.col("has_prov") & (
        (F.size(F.array_distinct("path")) < F.size("path")) | (F.col("origin") == F.col("dc"))
    )


def looped_in_window() -> Any:
    """True for a row :func:`looped` reports."""
    return F.col("in_window") & F.col("prov_error").isNull() & is_looped()


def looped(df: Any) -> Any:
    return df.filter(looped_in_window()).select(
        "dc",
        "ltopic",
        "rid",
        F.concat_ws(",", "path").alias("path"),
        "topic",
        "partition",
        "offset",
        "ts",
    )
