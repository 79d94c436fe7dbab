"""Kafka headers in Spark SQL: how many are called a name, and the first one's text.

Headers are read with ``headers.key`` / ``headers.value`` (whole-array projections) and
``array_position``: Spark evaluates lambda functions (``filter``, ``forall``...) row by row in
an interpreter that, on executors, builds a new SQL configuration for every array element it
reads, which made header decoding the bulk of the job.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F


def header_keys(headers: str = "headers") -> Any:
    """The names of the ``headers`` column's headers (an empty array for none)."""
    return F.coalesce(F.col(f"{headers}.key"), F.array().cast("array<string>"))


def header_count(name: str, headers: str = "headers") -> Any:
    """How many headers are called ``name``."""
    keys = header_keys(headers)
    return F.size(keys) - F.size(F.array_remove(keys, name))


def first_text(name: str, headers: str = "headers") -> Any:
    """The value of the first header called ``name`` as text (null when there is none)."""
    position = F.array_position(header_keys(headers), name)  # 1-based, 0 when absent
    return F.get(F.col(f"{headers}.value"), (position - 1).cast("int")).cast("string")
