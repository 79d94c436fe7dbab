"""The run state file (``spark_reconcile.state``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_reconcile.errors import ReconcileError
from spark_reconcile.ranges import PartitionRange
from spark_reconcile.state import RunState, load_state, save_state

pytestmark = pytest.mark.unit


def test_state_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s" / "state.json"
    assert load_state(path) is None
    ranges = [PartitionRange("SF", "users", "users", 1, 5, 9)]
    save_state(path, RunState.from_ranges(1, 2, ranges))
    state = load_state(path)
    assert state is not None
    assert (state.until_ms, state.end_offset("SF", "users", 1)) == (2, 9)
    assert state.end_offset("SF", "users", 0) is None
    path.write_text("{not json")
    with pytest.raises(ReconcileError, match="delete it and pass --since"):
        load_state(path)
