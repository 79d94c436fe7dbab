"""finished_within: the bounded wait the expiry check and the lag export share."""

from __future__ import annotations

import asyncio

import pytest

from aa.deadlines import finished_within

pytestmark = pytest.mark.unit


async def test_work_that_finished_is_reported_finished_and_left_alone() -> None:
    work = asyncio.get_running_loop().create_future()
    work.set_result(3)
    assert await finished_within(work, 0)
    assert work.result() == 3


async def test_work_that_never_answers_is_cancelled_and_reported_unfinished() -> None:
    never = asyncio.get_running_loop().create_future()
    assert not await finished_within(never, 0)
    assert never.cancelled()
