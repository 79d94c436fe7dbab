"""Reading a config file's text, with the errors both formats share."""

from __future__ import annotations

import os
import select
from pathlib import Path

from aa.errors import ConfigError

SIGNAL_CHECK_S = 0.2
"""Longest a config read waits in the kernel before Python looks at the signals again."""


def read_config_text(path: Path, not_utf8_hint: str = "") -> str:
    """The file's text; a :class:`ConfigError` naming the file when it cannot be read or is not
    UTF-8 (``not_utf8_hint`` is added to that message)."""
    try:
        data = _read_watching_signals(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the config file is not UTF-8 (byte {exc.start}); save it as UTF-8"
            + not_utf8_hint
        ) from None


def _read_watching_signals(path: Path) -> bytes:
    """The bytes of ``path``, waiting for a pipe's writer (``--config <(envsubst < t.yaml)``, a
    FIFO) at most :data:`SIGNAL_CHECK_S` at a time. Python runs a signal's handler between
    bytecodes: a SIGTERM that lands just before a blocking read enters the kernel is only seen
    once the writer writes or closes, so ``aa run`` would ignore the stop meanwhile.

    Opened without blocking (a FIFO's open waits for its writer, the same way), read once
    ``select`` says so: a FIFO no writer has opened yet is not readable, so it is waited for as
    a blocking open would."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks: list[bytes] = []
        while True:
            readable, _, _ = select.select([fd], [], [], SIGNAL_CHECK_S)
            if not readable:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:  # another reader took what woke this one
                continue
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)
