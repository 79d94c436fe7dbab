"""Thresholds (``spark_reconcile.thresholds``): what a run tolerates before it exits 1."""

from __future__ import annotations

import pytest

from spark_reconcile.errors import ReconcileError
from spark_reconcile.thresholds import Thresholds

pytestmark = pytest.mark.unit


def test_thresholds() -> None:
    t = Thresholds.parse("missing=2, delay_p99_ms=100")
    assert t.crossed({"missing": 2}, {"SF->NYC users": 100}) == []
    assert t.crossed({"missing": 3, "looped": 1}, {"SF->NYC users": 101}) == [
        "missing: 3 > 2",
        "looped: 1 > 0",
        "delay p99 of SF->NYC users: 101 ms > 100 ms",
    ]
    with pytest.raises(ReconcileError, match="NAME one of"):
        Thresholds.parse("lost=1")
    with pytest.raises(ReconcileError, match="not a number"):
        Thresholds.parse("missing=many")
