"""Hybrid logical clock: physical milliseconds, a logical counter, and the origin DC as the
final tie-break, so any two timestamps from different DCs are ordered the same everywhere.

A :class:`Clock` is monotonic: ``tick()`` never returns a timestamp at or below the last one,
across restarts too when it is given its last value (``Clock(dc, last=...)``). ``observe()``
merges a remote timestamp, refusing one further ahead of the local wall clock than
``max_drift_ms`` (a DC with a broken clock must not drag every clock into the future).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from aa.provenance import DC_NAME, check_dc_name
from conflict.errors import ClockSkewError, DecodeError

DEFAULT_MAX_DRIFT_MS = 60_000
MAX_PHYSICAL = (1 << 48) - 1
"""Event ids hold 48 bits of milliseconds (until the year 10889)."""
_DIGITS = re.compile(r"[0-9]{1,20}")


@dataclass(frozen=True, slots=True, order=True)
class HLC:
    """A timestamp: wall-clock milliseconds, a counter for events within one millisecond (or
    while the wall clock is behind), and the DC that issued it. Orders field by field."""

    physical: int
    logical: int
    dc: str

    def encode(self) -> str:
        return f"{self.physical}:{self.logical}:{self.dc}"

    @classmethod
    def decode(cls, text: str) -> HLC:
        parts = text.split(":") if isinstance(text, str) else []
        if len(parts) != 3:
            raise DecodeError("hlc", f"expected 'physical:logical:dc', got {text!r}")
        if not (_DIGITS.fullmatch(parts[0]) and _DIGITS.fullmatch(parts[1])):
            raise DecodeError("hlc", f"physical and logical must be decimal integers: {text!r}")
        physical, logical = int(parts[0]), int(parts[1])
        if physical > MAX_PHYSICAL:
            raise DecodeError("hlc", f"physical {physical} ms is beyond the 48-bit id range")
        if not DC_NAME.match(parts[2]):
            raise DecodeError("hlc", f"{parts[2]!r} is not a DC name: {text!r}")
        return cls(physical, logical, parts[2])


def wall_ms() -> int:
    """Milliseconds since the epoch, from the wall clock."""
    return int(time.time() * 1000)


class Clock:
    """The HLC of one writer in one DC."""

    def __init__(
        self,
        dc: str,
        *,
        last: HLC | None = None,
        now: Callable[[], int] = wall_ms,
        max_drift_ms: int = DEFAULT_MAX_DRIFT_MS,
    ) -> None:
        self.dc = check_dc_name(dc)
        self._now = now
        self.max_drift_ms = max_drift_ms
        self._physical = last.physical if last else 0
        self._logical = last.logical if last else 0

    @property
    def last(self) -> HLC:
        return HLC(self._physical, self._logical, self.dc)

    def tick(self) -> HLC:
        """A timestamp for a local event, greater than every one this clock gave or saw."""
        now = self._now()
        if now > self._physical:
            self._physical, self._logical = now, 0
        else:
            self._logical += 1
        return self.last

    def check(self, remote: HLC) -> None:
        """Raise ``ClockSkewError`` if ``remote`` is too far ahead of this DC's wall clock."""
        ahead = remote.physical - self._now()
        if ahead > self.max_drift_ms:
            raise ClockSkewError(
                f"HLC {remote.encode()} from {remote.dc} is {ahead} ms ahead of {self.dc}'s clock "
                f"(allowed drift {self.max_drift_ms} ms): fix that DC's clock (NTP) or raise "
                "max_drift_ms"
            )

    def observe(self, remote: HLC) -> HLC:
        """Merge a remote timestamp (an event received from another DC)."""
        self.check(remote)
        now = self._now()
        physical = max(now, self._physical, remote.physical)
        if physical == self._physical == remote.physical:
            logical = max(self._logical, remote.logical) + 1
        elif physical == self._physical:
            logical = self._logical + 1
        elif physical == remote.physical:
            logical = remote.logical + 1
        else:
            logical = 0
        self._physical, self._logical = physical, logical
        return self.last
