"""SIGTERM while a command starts: a clean stop, never the default kill.

Python's default for SIGTERM ends the process at once, killed by the signal (exit -15 to its
parent), whatever it was doing. A mirror process is stopped with SIGTERM at any moment of its
life, start-up included (a supervisor or a test may stop it as soon as it was spawned): so the
first thing ``aa`` does is to turn SIGTERM into :class:`Stopped`, raised where the process is,
which ``aa.cli.main`` turns into an exit code. Once a command runs its own event loop it takes
SIGTERM over (``loop.add_signal_handler``) and gives it back with :func:`restore` when done, so
no moment is left with the default.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any


class Stopped(Exception):
    """SIGTERM arrived before (or after) a command handled it itself."""


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def catch_sigterm() -> None:
    """From now on, SIGTERM raises :class:`Stopped` (the main thread only: signals go there)."""
    signal.signal(signal.SIGTERM, _raise_stopped)


def taken() -> Any:
    """The SIGTERM handler in place, for :func:`restore` once an event loop's is removed
    (``remove_signal_handler`` puts back the default, which kills)."""
    return signal.getsignal(signal.SIGTERM)


def restore(handler: Any) -> None:
    if handler is not None:
        signal.signal(signal.SIGTERM, handler)
