"""Checkpoints (:mod:`aa.checkpoints.model`): monotonic across restarts, and read back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aa.checkpoints.model import Checkpoint, Checkpoints

pytestmark = pytest.mark.unit


def _cp(up: int, down: int, partition: int = 0) -> Checkpoint:
    return Checkpoint("g", "users", partition, up, "users", down, "exact", 0)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), max_size=40), st.integers(0, 40))
def test_checkpoints_are_monotonic_across_restarts(pairs: list[tuple[int, int]], cut: int) -> None:
    emitted: list[Checkpoint] = []
    state = Checkpoints()
    for i, (up, down) in enumerate(pairs):
        if i == cut:  # a restart: a new task reads back what was written
            state = Checkpoints()
            state.remember(emitted)
        cp = state.advance(_cp(up, down))
        if cp is not None:
            emitted.append(cp)
    downs = [c.downstream for c in emitted]
    assert downs == sorted(downs)


def test_checkpoint_round_trip_and_per_group_listing() -> None:
    cp = _cp(5, 7)
    assert Checkpoint.decode(cp.encode()) == cp
    state = Checkpoints()
    state.remember([_cp(1, 2, 1), cp])
    assert [c.partition for c in state.for_group("g")] == [0, 1]
    assert state.for_group("other") == []
