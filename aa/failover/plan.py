"""A per-partition plan for moving a group, its rendering, and time parsing (pure)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from aiokafka import TopicPartition

from aa.errors import AaError

_RELATIVE = re.compile(r"^(?:now)?-(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


class PlanError(AaError):
    """A plan cannot be made or executed; nothing was committed."""


@dataclass(frozen=True, slots=True)
class Move:
    topic: str
    partition: int
    offset: int | None
    current: int | None
    basis: str
    """How ``offset`` was found (``exact``, ``min-of-origins``, ``time …``) or why it is
    missing."""

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def parse_time(text: str, now_ms: int | None = None) -> int:
    """Milliseconds since the epoch from ISO 8601 (``2026-11-22T19:00:00Z``), epoch
    milliseconds, or a time relative to now (``-2m``, ``now-90s``)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    t = text.strip()
    if m := _RELATIVE.match(t):
        return now - int(float(m.group(1)) * _UNIT_S[m.group(2)] * 1000)
    if t.isdigit():
        return int(t)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise PlanError(
            f"--at {text!r}: use ISO 8601 (2026-11-22T19:00:00Z), epoch milliseconds, or a "
            "time before now such as -2m or now-90s"
        ) from None
    if dt.tzinfo is None:
        raise PlanError(f"--at {text!r}: give a time zone (Z or +01:00)")
    return int(dt.timestamp() * 1000)


def render(title: str, moves: Sequence[Move]) -> str:
    rows = [("topic", "partition", "current", "new", "basis")]
    for m in moves:
        rows.append(
            (
                m.topic,
                str(m.partition),
                "-" if m.current is None else str(m.current),
                "REFUSED" if m.offset is None else str(m.offset),
                m.basis,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [title]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def committable(moves: Sequence[Move]) -> dict[TopicPartition, int]:
    """The offsets to commit; raises when any partition has no safe offset."""
    missing = [m for m in moves if m.offset is None]
    if missing:
        names = ", ".join(f"{m.topic}/{m.partition} ({m.basis})" for m in missing[:5])
        raise PlanError(
            f"no safe offset for {len(missing)} partition(s): {names}; nothing committed "
            "(use --at TIME for those, or wait for the flow to copy them)"
        )
    if not moves:
        raise PlanError("the plan is empty; nothing committed")
    return {m.tp: m.offset for m in moves if m.offset is not None}
