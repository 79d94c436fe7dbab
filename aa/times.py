"""One way to write a time on the command line, for every command (``aa failover --at``,
``aa reconcile --since/--until``), and one way to print one (ISO 8601, UTC).

A time is ISO 8601 with a zone (``2026-11-22T19:00:00Z``, ``...+01:00``), epoch milliseconds,
``now``, or a time before now: ``5m``, ``-5m`` and ``now-5m`` all mean five minutes ago (units
``ms``, ``s``, ``m``, ``h``, ``d``). A time without a zone is refused: read on another machine it
would mean another instant.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from aa.errors import AaError

UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_AGO = re.compile(r"^(?:now-|-)?(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
FORMS = (
    "ISO 8601 with a zone (2026-11-22T19:00:00Z), epoch milliseconds, now, or a time before "
    "now (5m, -5m and now-5m all mean five minutes ago; units ms, s, m, h, d)"
)


class TimeFormatError(AaError):
    """A time or duration option the parser cannot read; the message names the option."""


def parse_time(text: str, *, option: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds of ``text`` (see the module); errors name ``option``."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    t = text.strip()
    if t == "now":
        return now
    if t.isdigit():
        return int(t)
    if m := _AGO.match(t):
        return now - round(float(m.group(1)) * UNIT_MS[m.group(2)])
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        raise TimeFormatError(f"{option} {text!r}: use {FORMS}") from None
    if dt.tzinfo is None:
        raise TimeFormatError(
            f"{option} {text!r}: give a time zone ({t}Z for UTC, or an offset such as "
            f"{t}+01:00): without one the time means another instant on another machine"
        )
    return int(dt.timestamp() * 1000)


def parse_duration_ms(text: str, *, option: str) -> int:
    """``10m``, ``30s``, ``1h`` or plain milliseconds; never negative."""
    t = text.strip()
    if t.isdigit():
        return int(t)
    if m := _DURATION.match(t):
        return round(float(m.group(1)) * UNIT_MS[m.group(2)])
    raise TimeFormatError(f"{option} {text!r}: use milliseconds or a duration like 10m, 30s, 1h")


def iso(ms: int) -> str:
    """``2026-11-22T19:00:00Z`` (with ``.123`` when the milliseconds are not zero)."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    spec = "seconds" if ms % 1000 == 0 else "milliseconds"
    return dt.isoformat(timespec=spec).replace("+00:00", "Z")
