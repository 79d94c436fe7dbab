"""Observed-remove state, shared by the add-wins set and the multi-value register.

An event names the ids it supersedes (the ones its writer had seen); a superseded id never
comes back, whichever of the two events arrives first, so merging two states is the union of
their live entries minus every id either side saw superseded: commutative, associative and
idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(slots=True)
class Observed(Generic[V]):
    """The live entries by event id, and every id an event superseded."""

    live: dict[str, V] = field(default_factory=dict)
    superseded: set[str] = field(default_factory=set)

    def supersede(self, ids: Iterable[str]) -> None:
        for old in ids:
            self.superseded.add(old)
            self.live.pop(old, None)

    def put(self, event_id: str, value: V) -> None:
        """Keep ``value`` live unless an event already superseded ``event_id``."""
        if event_id not in self.superseded:
            self.live[event_id] = value

    def merged(self, other: Observed[V]) -> Observed[V]:
        superseded = self.superseded | other.superseded
        live = {i: v for i, v in (*self.live.items(), *other.live.items()) if i not in superseded}
        return Observed(live, superseded)
