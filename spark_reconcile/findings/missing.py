"""Missing: a record present at its origin, absent from a DC that should hold it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MISSING_COLUMNS = (
    "ltopic",
    "origin",
    "target",
    "rid",
    "topic",
    "partition",
    "offset",
    "ts",
    "bucket",
    "key",
    "value",
    "headers",
)


def missing(expected: Any) -> Callable[[Any], Any]:
    """``expected`` has columns ``origin``, ``ltopic``, ``target`` (from the topology): origin
    records (written locally, in the window) joined with it, minus what each target holds (by
    ``rid``: ``aa-src``, or the event id of an envelope). The origin's key, value, headers and
    timestamp ride along so that ``--repair`` can re-publish them."""
    from pyspark.sql import functions as F

    def transform(df: Any) -> Any:
        origin_records = df.filter(
            F.col("in_window") & ~F.col("has_prov") & F.col("prov_error").isNull()
        )
        wanted = origin_records.join(expected, ["origin", "ltopic"]).filter(
            F.col("target") != F.col("origin")
        )
        present = df.select(F.col("dc").alias("target"), "ltopic", "rid").distinct()
        return wanted.join(present, ["target", "ltopic", "rid"], "left_anti").select(
            *MISSING_COLUMNS
        )

    return transform
