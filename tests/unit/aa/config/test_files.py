"""Reading a config file: a stop signal is never held back by a pipe that is slow to write."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from aa.cli.stopping import Stopped, catch_sigterm
from aa.config.files import read_config_text

WRITER_PATIENCE_S = 30.0
"""How long the pipe's writer waits for the read to stop before it writes and closes (a bound
for a broken read, not a figure: a working one stops within a fraction of a second)."""


def test_a_sigterm_that_lands_just_before_the_config_read_blocks_stops_the_read(
    tmp_path: Path,
) -> None:
    """`aa run` whose config is a pipe (`--config <(envsubst < t.yaml)`, a FIFO): a SIGTERM that
    arrived just before the read entered the kernel only marked the signal; Python runs its
    handler between bytecodes, the read blocked until the writer wrote or closed, and the
    process ignored the stop (a clean clone's `make test`: test_sigterm_while_aa_run_reads_its_
    config_exits_cleanly waited 60 s; 3 of ~100 under load). The signal is sent to the writer's
    thread, so it never interrupts the read: the same state, every time."""
    fifo = tmp_path / "t.yaml"
    os.mkfifo(fifo)
    stopped = threading.Event()
    held_back: list[bool] = []

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # returns once the read end is open
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # marked, not run here
        held_back.append(not stopped.wait(WRITER_PATIENCE_S))
        if held_back[0]:  # the read still waits: end it (a stopped one closed its end)
            os.write(fd, b"datacenters: {}\n")
        os.close(fd)

    previous = signal.getsignal(signal.SIGTERM)
    catch_sigterm()
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with pytest.raises(Stopped):
            read_config_text(fifo)
        stopped.set()
    finally:
        stopped.set()
        thread.join()
        signal.signal(signal.SIGTERM, previous)
    assert held_back == [False], "the read ignored the SIGTERM until its writer gave up"
