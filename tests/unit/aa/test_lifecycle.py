"""The async lifecycle base (issue 13): idempotent start/close, ``async with``, and a
``ResourceWarning`` for a resource collected while open."""

from __future__ import annotations

import concurrent.futures
import gc
from pathlib import Path

import pytest

from aa.cli.main import main as cli_main
from aa.lifecycle import AsyncResource

pytestmark = pytest.mark.unit


class Counted(AsyncResource):
    def __init__(self) -> None:
        self.opened = self.closed = 0

    async def _open(self) -> None:
        self.opened += 1

    async def _close(self) -> None:
        self.closed += 1


async def test_start_and_close_are_idempotent() -> None:
    r = Counted()
    assert await r.start() is r
    await r.start()
    await r.close()
    await r.close()
    assert (r.opened, r.closed, r.is_open) == (1, 1, False)


async def test_async_with_closes_on_error() -> None:
    r = Counted()

    async def fail_inside() -> None:
        async with r as same:
            assert same.is_open
            raise RuntimeError

    with pytest.raises(RuntimeError):
        await fail_inside()
    assert (r.opened, r.closed) == (1, 1)


async def test_a_resource_collected_while_open_warns() -> None:
    held = [await Counted().start()]
    with pytest.warns(ResourceWarning, match="unclosed"):
        held.clear()  # the last reference: collected here


async def test_a_closed_or_never_started_resource_does_not_warn() -> None:
    closed = Counted()
    await closed.start()
    await closed.close()
    never = Counted()
    del closed, never
    gc.collect()  # filterwarnings = error: a warning here would fail the test


def test_aa_called_on_a_worker_thread_runs_its_command(tmp_path: Path) -> None:
    """A program (or a test) may call ``aa.cli.main.main`` off the main thread: only the main
    thread may set signal handlers, so SIGTERM is taken over there alone (it raised ValueError
    'signal only works in main thread' before the command ran)."""
    missing = str(tmp_path / "none.yaml")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        code = pool.submit(cli_main, ["plan", "--config", missing]).result()
    assert code == 2
