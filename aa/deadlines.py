"""Bounded waits on background work that may never answer (a black-holed DC, a rebalance).

The work runs as its own task and is waited for with a deadline, not cancelled into: a
cancellation aiokafka swallows would otherwise hold the caller forever. Past the deadline the
task is cancelled and not awaited; the caller says what did not answer (one log line or one
error), and goes on.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def finished_within(task: asyncio.Future[Any], timeout_s: float) -> bool:
    """Whether ``task`` finished within ``timeout_s`` seconds; if not, it is cancelled (without
    waiting for the cancellation to land) and ``False`` is returned."""
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if task in done:
        return True
    task.cancel()
    return False
