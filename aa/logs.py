"""structlog, configured once: JSON lines for services, readable output in a terminal."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

import structlog

_configured = False


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
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
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
        ],
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(formatter)
    root.addHandler(handler)
    root.setLevel(max(numeric, logging.WARNING))
    _configured = True


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
