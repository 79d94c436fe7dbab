"""A per-partition plan for moving a group, and its rendering (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka import TopicPartition

from aa.errors import AaError


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
