"""The demo's steps and its Ctrl-C: each step is announced by :func:`say`, and the story runs
under :func:`run_interruptibly`, so that Ctrl-C stops it at the latest at the next step.

``asyncio.run`` turns the first Ctrl-C into one cancellation of the story. A library that
catches that cancellation (Python 3.11's ``asyncio.wait_for`` loses one when the awaited call
finishes at the same moment, and aiokafka waits that way) lets the story run on, and the user's
Ctrl-C is ignored. Here the cancellation is repeated until the story ends, and every step
boundary checks for it, so the demo always stops and cleans up.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

RECANCEL_S = 0.5
"""How often an interrupted story is cancelled again while it has not ended."""

CHILD_STOP_S = 30.0
"""How long a child process stopped by Ctrl-C may take to end before it is killed."""

_interrupted = False


def say(msg: str) -> None:
    """Announce a step; after Ctrl-C, stop here instead (``KeyboardInterrupt``)."""
    if _interrupted:
        raise KeyboardInterrupt
    print(f"\n== {msg}", flush=True)


def run_interruptibly(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, except that Ctrl-C (SIGINT) always ends it with
    ``KeyboardInterrupt``; a second Ctrl-C raises it at once."""
    global _interrupted
    _interrupted = False
    try:
        with asyncio.Runner() as runner:
            loop = runner.get_loop()
            task = loop.create_task(main)

            def cancel_until_done() -> None:
                if not task.done():
                    task.cancel()
                    loop.call_later(RECANCEL_S, cancel_until_done)

            def on_sigint(signum: int, frame: FrameType | None) -> None:
                global _interrupted
                if _interrupted:
                    raise KeyboardInterrupt
                _interrupted = True
                loop.call_soon_threadsafe(cancel_until_done)

            previous = signal.signal(signal.SIGINT, on_sigint)
            try:
                with _wakes_on_signals(loop):
                    result = runner.run(_await(task))
            except asyncio.CancelledError:
                if not _interrupted:
                    raise
            finally:
                signal.signal(signal.SIGINT, previous)
        if _interrupted:  # cancelled, or it swallowed every cancellation and still ended
            raise KeyboardInterrupt
        return result
    finally:
        _interrupted = False  # the caller handles the interrupt from here (and may say() more)


@contextlib.contextmanager
def _wakes_on_signals(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Any signal wakes ``loop``: the kernel hands a process's signal to any of its threads
    (the demo's steps run in threads, so does a job's wait), and Python runs the handler only
    once the main thread runs again, so an event loop asleep in select, no timer due, slept on.
    The signal's byte on a socket the loop reads wakes it; the handler then runs."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    loop.add_reader(reader.fileno(), reader.recv, 64)
    before = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(before)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()


async def _await(task: asyncio.Task[T]) -> T:
    return await task


async def run_child(cmd: Sequence[str], log: Path) -> int:
    """Run ``cmd`` with its output in ``log``; its exit code. Cancelled (Ctrl-C), it stops the
    child (SIGTERM, SIGKILL after :data:`CHILD_STOP_S`) before it ends: a child run in a
    thread held the demo's Ctrl-C until it finished on its own (the reconcile job: minutes)."""
    child = _spawn(cmd, log)
    try:
        return await asyncio.to_thread(child.wait)
    except BaseException:
        _stop(child)
        raise


def _spawn(cmd: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)


def _stop(child: subprocess.Popen[bytes]) -> None:
    child.terminate()
    try:
        child.wait(CHILD_STOP_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
