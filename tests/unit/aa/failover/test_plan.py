"""Failover plans (:mod:`aa.failover.plan`): a plan that cannot place every partition commits
nothing."""

from __future__ import annotations

import pytest

from aa.failover.plan import Move, PlanError, committable, render

pytestmark = pytest.mark.unit


def test_a_plan_with_an_unknown_partition_commits_nothing() -> None:
    moves = [Move("t", 0, 5, None, "exact"), Move("t", 1, None, 3, "before-syncs")]
    with pytest.raises(PlanError, match="t/1"):
        committable(moves)
    assert "REFUSED" in render("plan", moves)
    assert committable(moves[:1]) == {moves[0].tp: 5}
    with pytest.raises(PlanError, match="empty"):
        committable([])
