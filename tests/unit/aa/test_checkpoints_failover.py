"""Pure parts of checkpoints, failover plans and heartbeats."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aa.checkpoints.model import Checkpoint, Checkpoints
from aa.failover.plan import Move, PlanError, committable, render
from aa.heartbeat.model import Heartbeat, HeartbeatView
from aa.provenance import MIRRORED_AT

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


def test_a_plan_with_an_unknown_partition_commits_nothing() -> None:
    moves = [Move("t", 0, 5, None, "exact"), Move("t", 1, None, 3, "before-syncs")]
    with pytest.raises(PlanError, match="t/1"):
        committable(moves)
    assert "REFUSED" in render("plan", moves)
    assert committable(moves[:1]) == {moves[0].tp: 5}
    with pytest.raises(PlanError, match="empty"):
        committable([])


def test_heartbeat_view_keeps_the_newest_remote_beat() -> None:
    view = HeartbeatView("NYC")
    view.add(Heartbeat("SF", 1000).encode(), [(MIRRORED_AT, b"1300")], read_ms=2000)
    view.add(Heartbeat("SF", 900).encode(), [], read_ms=2000)
    view.add(Heartbeat("NYC", 5000).encode(), [], read_ms=5000)  # our own: ignored
    view.add(b"not json", [], read_ms=0)
    sf = view.remotes["SF"]
    assert (sf.newest_ms, sf.latency_s, sf.age_s(3000)) == (1000, 0.3, 2.0)
    assert set(view.remotes) == {"SF"}
