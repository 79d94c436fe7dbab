"""DC bitmasks: one bit per DC, so the DCs that hold (or should hold) a record id or an event
fit one long, which Spark aggregates with fixed-width ``bit_or`` / ``bit_and`` (presence,
divergent's suspect keys)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.errors import ReconcileError

MAX_DCS = 62
"""DCs one bitmask (a signed 64-bit long) can name."""


def dc_bits(dcs: Iterable[str]) -> dict[str, int]:
    """One bit per DC, in name order."""
    names = sorted(set(dcs))
    if len(names) > MAX_DCS:
        raise ReconcileError(
            f"{len(names)} DCs: aa reconcile compares at most {MAX_DCS} DCs in one run; "
            "run it per group of DCs"
        )
    return {d: 1 << i for i, d in enumerate(names)}


def mask_of(mapping: Mapping[str, int], column: Any) -> Any:
    """The mask ``mapping`` gives ``column``'s value (0 for a value it does not name), as a
    long: a literal map in the plan."""
    if not mapping:
        return F.lit(0).cast("long")
    pairs = [F.lit(x) for kv in sorted(mapping.items()) for x in kv]
    return F.coalesce(F.create_map(*pairs)[column].cast("long"), F.lit(0).cast("long"))
