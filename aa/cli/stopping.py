"""SIGTERM while a command starts: a clean stop, never the default kill.

Python's default for SIGTERM ends the process at once, killed by the signal (exit -15 to its
parent), whatever it was doing. A mirror process is stopped with SIGTERM at any moment of its
life, start-up included (a supervisor or a test may stop it as soon as it was spawned): so the
first thing ``aa`` does is to turn SIGTERM into :class:`Stopped`, raised where the process is,
which ``aa.cli.main`` turns into an exit code. Once a command runs its own event loop it takes
SIGTERM over and gives it back when done (:func:`aa.lifecycle.loop_signals`), so no moment is
left with the default.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class Stopped(Exception):
    """SIGTERM arrived before (or after) a command handled it itself."""


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def catch_sigterm() -> None:
    """From now on, SIGTERM raises :class:`Stopped`. Only on the main thread, where Python runs
    signal handlers and alone may set them: ``aa`` called on another thread (a program's worker,
    a test) leaves the process's handlers to its main thread."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_stopped)
