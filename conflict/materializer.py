"""Folds a stream of events into per-key state: idempotent on duplicate ids, insensitive to
order, with change callbacks, a digest to compare DCs, and snapshots to resume from."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from conflict.envelope import Event
from conflict.hlc import Clock
from conflict.resolvers.registry import ResolverRegistry, canonical, state_bytes

OnChange = Callable[[str, Any], None]


@dataclass(slots=True)
class _Key:
    events: dict[str, dict[str, Event]] = field(default_factory=dict)
    """resolver name -> event id -> event."""
    value: Any = None


class Materializer:
    """Per-key converged state. ``apply`` validates (resolver, optional clock drift) and may
    raise :class:`~conflict.errors.ConflictError`; the caller raises or dead-letters."""

    def __init__(
        self, registry: ResolverRegistry | None = None, *, clock: Clock | None = None
    ) -> None:
        self.registry = registry if registry is not None else ResolverRegistry()
        self.clock = clock
        self._keys: dict[str, _Key] = {}
        self._callbacks: list[OnChange] = []
        self.offsets: dict[str, int] = {}
        """``topic:partition`` -> next offset, for resuming from a snapshot."""

    def on_change(self, callback: OnChange) -> None:
        self._callbacks.append(callback)

    def apply(self, event: Event, logical_topic: str = "") -> bool:
        """Add ``event``; True when it was new (a duplicate id changes nothing)."""
        resolver = self.registry.for_event(logical_topic, event.type)
        resolver.validate(event)
        if self.clock is not None:
            self.clock.observe(event.hlc)
        slot = self._keys.setdefault(event.key, _Key())
        bucket = slot.events.setdefault(resolver.name, {})
        if event.id in bucket:
            return False
        bucket[event.id] = event
        before = slot.value
        slot.value = self._value(slot)
        if slot.value != before:
            for cb in self._callbacks:
                cb(event.key, slot.value)
        return True

    def _value(self, slot: _Key) -> Any:
        values = {
            name: self.registry.get(name).value(canonical(events.values()))
            for name, events in slot.events.items()
        }
        return next(iter(values.values())) if len(values) == 1 else values

    def get(self, key: str, default: Any = None) -> Any:
        slot = self._keys.get(key)
        return default if slot is None else slot.value

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for key in sorted(self._keys):
            yield key, self._keys[key].value

    def __len__(self) -> int:
        return len(self._keys)

    def state_bytes(self) -> bytes:
        """Every key's state, canonically encoded: byte-identical in DCs that converged."""
        return state_bytes(dict(self))

    def digest(self) -> str:
        return hashlib.sha256(self.state_bytes()).hexdigest()

    def snapshot(self) -> bytes:
        events = [
            e.to_json()
            for slot in self._keys.values()
            for bucket in slot.events.values()
            for e in bucket.values()
        ]
        return orjson.dumps({"offsets": self.offsets, "events": events})

    @classmethod
    def from_snapshot(
        cls,
        data: bytes,
        registry: ResolverRegistry | None = None,
        topics: Mapping[str, str] | None = None,
    ) -> Materializer:
        """Rebuild from :meth:`snapshot`; resume reading at ``offsets``."""
        doc = orjson.loads(data)
        m = cls(registry)
        for raw in doc["events"]:
            m.apply(Event.decode(orjson.dumps(raw)))
        m.offsets = dict(doc["offsets"])
        return m
