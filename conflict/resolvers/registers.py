"""Registers: last-writer-wins, field-level LWW, and the multi-value register (siblings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conflict.envelope import Event
from conflict.errors import ResolverError


class LWWResolver:
    """The greatest event by (HLC, DC, id) wins; a ``delete`` event resolves to ``None``."""

    name = "lww"

    def validate(self, event: Event) -> None:
        return None

    def value(self, events: Sequence[Event]) -> Any:
        if not events:
            return None
        last = events[-1]
        return None if last.type == "delete" else last.payload


class FieldLWWResolver:
    """Each field is its own LWW register: concurrent edits to different fields both survive."""

    name = "field-lww"

    def validate(self, event: Event) -> None:
        if event.type != "delete" and not isinstance(event.payload, dict):
            raise ResolverError(
                f"event {event.id} ({event.type}): field-lww needs a JSON object payload "
                f"{{field: value}}, got {type(event.payload).__name__}"
            )

    def value(self, events: Sequence[Event]) -> Any:
        fields: dict[str, Any] = {}
        for e in events:  # ascending order: later writes overwrite earlier ones
            if e.type == "delete":
                fields.clear()
                continue
            for k, v in e.payload.items():
                if v is None:
                    fields.pop(k, None)
                else:
                    fields[k] = v
        return fields


class MultiValueResolver:
    """Keeps every concurrent version (the "ship both books" choice) until a later event that
    lists them in ``supersedes`` replaces them. State: the siblings' payloads in HLC order."""

    name = "multi-value"

    def validate(self, event: Event) -> None:
        return None

    def value(self, events: Sequence[Event]) -> Any:
        superseded = {s for e in events for s in e.supersedes}
        return [
            {"id": e.id, "origin": e.origin, "value": e.payload}
            for e in events
            if e.id not in superseded and e.type != "delete"
        ]
