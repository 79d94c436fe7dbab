"""The time window a run checks: ``[since, until)`` in epoch milliseconds, plus a slack.

Copies keep the origin's CreateTime, so an origin record and all its copies share a timestamp:
filtering every DC on the same window compares like with like. Records are *read* from
``since - slack`` (placement in a partition is not in timestamp order) to the end of each
partition, so a copy written late, or a repaired record, is still seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from aa import times
from spark_reconcile.errors import ReconcileError


@dataclass(frozen=True, slots=True)
class Window:
    """Records with ``since_ms <= timestamp < until_ms`` are checked."""

    since_ms: int
    until_ms: int
    slack_ms: int = 600_000

    def __post_init__(self) -> None:
        if self.until_ms <= self.since_ms:
            raise ReconcileError(
                f"--until ({self.until_ms}) must be after --since ({self.since_ms})"
            )
        if self.slack_ms < 0:
            raise ReconcileError("--slack must not be negative")

    @property
    def read_from_ms(self) -> int:
        return max(0, self.since_ms - self.slack_ms)


def parse_time(text: str, *, now_ms: int | None = None, option: str = "--since") -> int:
    """Epoch ms of ``text``, written as every `aa` command takes a time (:mod:`aa.times`: ISO
    8601 with a zone, epoch ms, ``now``, or a time before now such as ``24h``, ``-30m``)."""
    try:
        return times.parse_time(text, option=option, now_ms=now_ms)
    except times.TimeFormatError as exc:
        raise ReconcileError(str(exc)) from None


def parse_duration_ms(text: str, *, option: str = "--slack") -> int:
    """``10m``, ``30s``, ``1h`` or plain milliseconds."""
    try:
        return times.parse_duration_ms(text, option=option)
    except times.TimeFormatError as exc:
        raise ReconcileError(str(exc)) from None
