"""Malformed: records whose ``aa-*`` headers or event payload cannot be decoded. They are kept
out of the other findings (their identity is unknown) and reported here, never dropped."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F


def is_malformed() -> Any:
    """True for a row :func:`malformed` reports."""
    return F.col("in_window") & (F.col("prov_error").isNotNull() | F.col("event_error").isNotNull())


def malformed(df: Any) -> Any:
    return df.filter(is_malformed()).select(
        "dc",
        "ltopic",
        "topic",
        "partition",
        "offset",
        "ts",
        F.when(F.col("prov_error").isNotNull(), F.lit("provenance"))
        .otherwise(F.lit("event"))
        .alias("kind"),
        F.coalesce("prov_error", "event_error").alias("reason"),
    )
