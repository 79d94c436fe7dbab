"""The coordinator watch: a call that waits on a coordinator the cluster cannot host is given
up, with the cause, and cancelled (nothing left waiting behind); one that answers is not."""

from __future__ import annotations

import asyncio

import pytest

from aa import coordinators
from aa.coordinators import CoordinatorBlocked, unless_blocked, waited

pytestmark = pytest.mark.unit

CAUSE = CoordinatorBlocked("transaction", "its brokers cannot create __transaction_state")


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coordinators, "CHECK_AFTER_S", 0.01)


async def test_a_call_that_answers_is_returned_and_nothing_is_asked() -> None:
    asked = []

    async def why() -> CoordinatorBlocked | None:
        asked.append(1)
        return None

    assert await waited(asyncio.sleep(0, "pid"), why) == "pid"
    assert asked == []


async def test_a_call_waiting_on_a_blocked_coordinator_raises_the_cause_and_is_cancelled() -> None:
    never = asyncio.get_running_loop().create_future()
    answers = iter([None, CAUSE])  # the first ask finds nothing: it keeps waiting

    async def why() -> CoordinatorBlocked | None:
        return next(answers)

    cancelled = []

    async def start() -> str:
        try:
            await never
        except asyncio.CancelledError:
            cancelled.append("start")
            raise
        return "pid"

    with pytest.raises(CoordinatorBlocked) as raised:
        await waited(start(), why)
    assert raised.value is CAUSE
    assert raised.value.kind == "transaction"
    assert cancelled == ["start"]  # not left waiting behind the flow


async def test_a_group_not_joined_in_time_raises_the_cause_unless_stopped_or_joined() -> None:
    async def why() -> CoordinatorBlocked | None:
        return CAUSE

    with pytest.raises(CoordinatorBlocked):
        await unless_blocked(set, why, asyncio.Event())
    await unless_blocked(lambda: {"users-0"}, why, asyncio.Event())  # joined: nothing raised
    stop = asyncio.Event()
    stop.set()
    await unless_blocked(set, why, stop)  # stopping: nothing asked
