"""The time window a run checks: ``[since, until)`` in epoch milliseconds, plus a slack.

Copies keep the origin's CreateTime, so an origin record and all its copies share a timestamp:
filtering every DC on the same window compares like with like. Records are *read* from
``since - slack`` (placement in a partition is not in timestamp order) to the end of each
partition, so a copy written late, or a repaired record, is still seen.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from spark_reconcile.errors import ReconcileError

_RELATIVE = re.compile(r"^-?(\d+)([smhd])$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


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
    """Epoch ms from ``now``, an epoch in ms, an ISO-8601 time (UTC unless it says otherwise)
    or a duration before now (``24h``, ``-30m``, ``7d``)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    t = text.strip()
    if t == "now":
        return now
    if t.isdigit():
        return int(t)
    m = _RELATIVE.match(t)
    if m:
        return now - int(m.group(1)) * _UNIT_MS[m.group(2)]
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        raise ReconcileError(
            f"{option} {text!r}: use now, epoch milliseconds, ISO-8601 "
            "(2025-01-31T00:00:00Z) or a duration before now (24h, 30m, 7d)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def parse_duration_ms(text: str, *, option: str = "--slack") -> int:
    """``10m``, ``30s``, ``1h`` or plain milliseconds."""
    t = text.strip()
    if t.isdigit():
        return int(t)
    m = _RELATIVE.match(t)
    if not m or t.startswith("-"):
        raise ReconcileError(f"{option} {text!r}: use milliseconds or a duration like 10m, 30s, 1h")
    return int(m.group(1)) * _UNIT_MS[m.group(2)]
