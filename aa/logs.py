"""structlog, configured once: JSON lines for services, readable output in a terminal."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from collections.abc import Iterator, MutableMapping
from typing import Any

import structlog

_configured = False

REPEAT_WINDOW_S = 60.0
"""A client library's complaint of one kind is logged at most once per this many seconds."""

CLIENT_LOGGERS = ("aiokafka",)
"""Libraries whose log lines are held to one per kind per window: aiokafka retries a DC that is
down every 100 ms and logs each failed connect, fetch, metadata update and heartbeat."""

_clock = time.monotonic
_DIGITS = re.compile(r"\d+")
_KINDS_LIMIT = 1_000


def configure(*, json: bool | None = None, level: str | None = None) -> None:
    """Configure structlog and stdlib logging. Idempotent; later calls may switch the format.

    ``json=None`` picks JSON unless stderr is a terminal; ``AA_LOG_FORMAT=json|console`` and
    ``AA_LOG_LEVEL`` override the defaults.
    """
    global _configured
    env_format = os.environ.get("AA_LOG_FORMAT")
    if json is None:
        json = env_format == "json" if env_format else not sys.stderr.isatty()
    level_name = (level or os.environ.get("AA_LOG_LEVEL") or "INFO").upper()
    numeric = logging.getLevelNamesMapping().get(level_name, logging.INFO)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]
    # Tracebacks are plain text, never rich's with local variables: a frame of a client
    # connection holds the SASL password (issue 29). Client libraries' records get the same.
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    )
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    # aiokafka (and asyncio) log through stdlib logging: render their records with the same
    # processors and renderer, so `--log-format json` gives JSON lines only. Quiet below
    # WARNING unless asked.
    formatter = structlog.stdlib.ProcessorFormatter(
        processor=renderer,
        foreign_pre_chain=[
            structlog.stdlib.add_logger_name,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _add_suppressed,
            structlog.processors.format_exc_info,
        ],
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.addFilter(_client_passing)
    handler.addFilter(ClientRepeats())
    handler.setFormatter(formatter)
    root.addHandler(handler)
    root.setLevel(max(numeric, logging.WARNING))
    _configured = True


PASSING_CLIENT_STATES = (
    ("aiokafka.cluster", "Topic %s not found in cluster metadata", ""),
    ("aiokafka.consumer.fetcher", "Failed fetch offsets from %s: %s", "NotLeaderForPartition"),
)
"""Client messages logged at ERROR for a state that passes on its own on a normal start: a topic
aa is creating (its heartbeats, a target topic), a new partition electing its leader. aiokafka
retries them; aa reports what does not pass (a topic it cannot create, a flow that fails)."""


def _client_passing(record: logging.LogRecord) -> bool:
    """False for the records of :data:`PASSING_CLIENT_STATES` (not shown)."""
    return not any(
        record.name == name and record.msg == msg and marker in record.getMessage()
        for name, msg, marker in PASSING_CLIENT_STATES
    )


class ClientRepeats(logging.Filter):
    """Lets each kind of client-library message through once per :data:`REPEAT_WINDOW_S`.

    A kind is the logger, the level and the message template with its numbers masked (so the
    same complaint about another node or port is the same kind). The line that passes after a
    window carries ``suppressed``: how many of its kind were left out since the last one. Other
    loggers (aa's own lines, asyncio) pass untouched."""

    def __init__(self) -> None:
        super().__init__()
        self._kinds: dict[tuple[str, int, str], tuple[float, int]] = {}
        """Per kind: when one last passed, and how many were left out since."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(CLIENT_LOGGERS):
            return True
        key = (record.name, record.levelno, _DIGITS.sub("#", str(record.msg))[:200])
        now = _clock()
        passed, left_out = self._kinds.get(key, (None, 0))
        if passed is not None and now - passed < REPEAT_WINDOW_S:
            self._kinds[key] = (passed, left_out + 1)
            return False
        if len(self._kinds) >= _KINDS_LIMIT:  # bounded, whatever the library formats
            self._kinds.clear()
        self._kinds[key] = (now, 0)
        if left_out:
            record.aa_suppressed = left_out
        return True


def _add_suppressed(
    _logger: Any, _name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """``suppressed`` on a client line that passed after others of its kind were held back."""
    record = event.get("_record")
    left_out = getattr(record, "aa_suppressed", None)
    if left_out:
        event["suppressed"] = left_out
    return event


def _stderr_logger(*_args: Any) -> structlog.PrintLogger:
    """A print logger on whatever ``sys.stderr`` is now (not the one at configure time)."""
    return structlog.PrintLogger(file=sys.stderr)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]  # generic only in typeshed
    """Writes to whatever ``sys.stderr`` is at the time of the record (tests swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def get_logger(name: str, **bound: Any) -> Any:
    """A structlog logger bound to ``component=name`` and ``bound``.

    A lazy proxy: it renders with the configuration current at each call, so module-level
    loggers created at import follow a later ``configure`` (``--log-format json``)."""
    if not _configured:
        configure()
    return structlog.get_logger(name, component=name, **bound)


@contextlib.contextmanager
def quiet_client_logs() -> Iterator[None]:
    """aiokafka logs every refused connection at ERROR; while probing, the caller reports them."""
    logger = logging.getLogger("aiokafka")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
