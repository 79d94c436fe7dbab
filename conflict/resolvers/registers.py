"""Registers: last-writer-wins, field-level LWW, and the multi-value register (siblings).

Events are compared by :attr:`Event.order` — (HLC physical, logical, DC, then id) — the same
total order in every DC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conflict.envelope import Event, Order
from conflict.errors import ResolverError
from conflict.resolvers.observed import Observed

DELETE = "delete"


class LWWResolver:
    """The greatest event by (HLC, DC, id) wins; a winning ``delete`` resolves to ``None``.

    State: the winning event (``None`` for no events).
    """

    name = "lww"

    def validate(self, event: Event) -> None:
        return None

    def empty(self) -> Event | None:
        return None

    def add(self, state: Event | None, event: Event) -> Event | None:
        return event if state is None or event.order > state.order else state

    def merge(self, a: Event | None, b: Event | None) -> Event | None:
        return a if b is None else self.add(a, b)

    def value(self, state: Event | None) -> Any:
        return None if state is None or state.type == DELETE else state.payload


@dataclass(slots=True)
class Fields:
    """Field-level LWW state: each field's latest write, and the latest whole-record delete."""

    cleared: Order | None = None
    """:attr:`Event.order` of the latest ``delete``: writes at or before it are hidden."""
    fields: dict[str, tuple[Order, Any]] = field(default_factory=dict)
    """field -> (order of its latest write, value; ``None`` is a deleted field)."""


class FieldLWWResolver:
    """Each field is its own LWW register: concurrent edits to different fields both survive.

    Payload ``{field: value}``; a ``null`` value deletes the field, a ``delete`` event deletes
    every field written before it.
    """

    name = "field-lww"

    def validate(self, event: Event) -> None:
        if event.type != DELETE and not isinstance(event.payload, dict):
            raise ResolverError(
                f"event {event.id} ({event.type}): field-lww needs a JSON object payload "
                f"{{field: value}}, got {type(event.payload).__name__}"
            )

    def empty(self) -> Fields:
        return Fields()

    def add(self, state: Fields, event: Event) -> Fields:
        order = event.order
        if event.type == DELETE:
            if state.cleared is None or order > state.cleared:
                state.cleared = order
            return state
        fields = state.fields
        for k, v in event.payload.items():
            old = fields.get(k)
            if old is None or order > old[0]:
                fields[k] = (order, v)
        return state

    def merge(self, a: Fields, b: Fields) -> Fields:
        out = Fields(a.cleared, dict(a.fields))
        if b.cleared is not None and (out.cleared is None or b.cleared > out.cleared):
            out.cleared = b.cleared
        for k, (order, v) in b.fields.items():
            old = out.fields.get(k)
            if old is None or order > old[0]:
                out.fields[k] = (order, v)
        return out

    def value(self, state: Fields) -> Any:
        cleared = state.cleared
        return {
            k: v
            for k, (order, v) in sorted(state.fields.items())
            if v is not None and (cleared is None or order > cleared)
        }


Siblings = Observed[Event]
"""Multi-value state: the versions nothing supersedes, and every superseded id."""


class MultiValueResolver:
    """Keeps every concurrent version (the "ship both books" choice) until a later event that
    lists them in ``supersedes`` replaces them. Value: ``[{"id", "origin", "value"}, ...]`` of
    the live versions in (HLC, DC, id) order; a live ``delete`` is a tombstone, not a value."""

    name = "multi-value"

    def validate(self, event: Event) -> None:
        return None

    def empty(self) -> Siblings:
        return Siblings()

    def add(self, state: Siblings, event: Event) -> Siblings:
        state.supersede(event.supersedes)
        state.put(event.id, event)
        return state

    def merge(self, a: Siblings, b: Siblings) -> Siblings:
        return a.merged(b)

    def value(self, state: Siblings) -> Any:
        return [
            {"id": e.id, "origin": e.origin, "value": e.payload}
            for e in sorted(state.live.values(), key=lambda e: e.order)
            if e.type != DELETE
        ]
