"""Folds a stream of events into per-key state: idempotent on duplicate ids, insensitive to
order, with change callbacks, a digest to compare DCs, and snapshots to resume from.

Each key keeps one resolver state per resolver its events were routed to (usually one) and the
events themselves (for duplicate detection and snapshots). Folding is incremental — one
``Resolver.add`` per new event — and a key's value is computed when read, or at once when
change callbacks are registered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from conflict.envelope import Event
from conflict.errors import ConflictError, SnapshotError
from conflict.hlc import Clock
from conflict.resolvers.registry import ResolverRegistry, state_bytes
from conflict.types import ResolvedState, Resolver

OnChange = Callable[[str, ResolvedState], None]
SNAPSHOT_VERSION = 1
_UNSET: Any = object()


@dataclass(slots=True)
class _Fold:
    resolver: Resolver[Any]
    state: Any
    events: dict[str, Event] = field(default_factory=dict)


@dataclass(slots=True)
class _Key:
    folds: dict[str, _Fold] = field(default_factory=dict)
    """resolver name -> its fold of this key's events."""
    value: Any = _UNSET


class Materializer:
    """Per-key converged state.

    ``apply`` validates (resolver, and clock drift when a :class:`Clock` is given) and raises
    :class:`~conflict.errors.ConflictError` for an event it cannot use, changing nothing; the
    caller raises or dead-letters. A key whose events all go to one resolver has that
    resolver's value; a key whose event types map to several resolvers has
    ``{resolver name: value}``.

    Give it the :class:`Clock` of this DC's :class:`~conflict.EventWriter` and every event it
    folds advances that clock (HLC causality: a write made after reading state is ordered after
    it). The drift check makes what a DC accepts depend on its wall clock, so events it refuses
    must be dead-lettered and re-published once the clock is fixed, not ignored.
    """

    def __init__(
        self, registry: ResolverRegistry | None = None, *, clock: Clock | None = None
    ) -> None:
        self.registry = registry if registry is not None else ResolverRegistry()
        self.clock = clock
        self._keys: dict[str, _Key] = {}
        self._callbacks: list[OnChange] = []
        self.events = 0
        """Distinct events folded."""
        self.offsets: dict[str, int] = {}
        """``topic:partition`` -> next offset to read, for resuming from a snapshot."""

    def on_change(self, callback: OnChange) -> None:
        """Call ``callback(key, value)`` whenever a key's value changes."""
        self._callbacks.append(callback)

    def apply(self, event: Event, logical_topic: str = "") -> bool:
        """Add ``event``; True when it was new (a duplicate id changes nothing)."""
        resolver = self.registry.for_event(logical_topic, event.type)
        return self._apply(resolver, event)

    def _apply(self, resolver: Resolver[Any], event: Event) -> bool:
        slot = self._keys.get(event.key)
        fold = slot.folds.get(resolver.name) if slot is not None else None
        if fold is not None and event.id in fold.events:
            return False
        resolver.validate(event)
        if self.clock is not None:
            self.clock.observe(event.hlc)
        if slot is None:
            slot = self._keys[event.key] = _Key()
        if fold is None:
            fold = slot.folds[resolver.name] = _Fold(resolver, resolver.empty())
        before = self._value(slot) if self._callbacks else _UNSET
        fold.events[event.id] = event
        fold.state = resolver.add(fold.state, event)
        self.events += 1
        slot.value = _UNSET
        if self._callbacks:
            after = self._value(slot)
            if after != before:
                for cb in self._callbacks:
                    cb(event.key, after)
        return True

    def _value(self, slot: _Key) -> Any:
        if slot.value is _UNSET:
            values = {name: f.resolver.value(f.state) for name, f in slot.folds.items()}
            slot.value = next(iter(values.values())) if len(values) == 1 else values
        return slot.value

    def get(self, key: str, default: Any = None) -> ResolvedState:
        slot = self._keys.get(key)
        return default if slot is None else self._value(slot)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[tuple[str, ResolvedState]]:
        """``(key, value)`` in key order."""
        for key in sorted(self._keys):
            yield key, self._value(self._keys[key])

    def __len__(self) -> int:
        return len(self._keys)

    def state_bytes(self) -> bytes:
        """Every key's state, canonically encoded: byte-identical in DCs that converged."""
        return state_bytes(dict(self))

    def digest(self) -> str:
        return hashlib.sha256(self.state_bytes()).hexdigest()

    def snapshot(self) -> bytes:
        """Events (with the resolver each was folded by) and offsets, as JSON."""
        folds = [
            {"resolver": name, "events": [e.to_json() for e in fold.events.values()]}
            for slot in self._keys.values()
            for name, fold in slot.folds.items()
        ]
        return orjson.dumps({"version": SNAPSHOT_VERSION, "offsets": self.offsets, "folds": folds})

    @classmethod
    def from_snapshot(
        cls, data: bytes, registry: ResolverRegistry | None = None, *, clock: Clock | None = None
    ) -> Materializer:
        """Rebuild from :meth:`snapshot` (each event goes back to the resolver it was folded
        by, which ``registry`` must know); resume reading at :attr:`offsets`.
        :class:`SnapshotError` says what is wrong with a snapshot that cannot be restored."""
        m = cls(registry, clock=clock)
        offsets, folds = _read_snapshot(data)
        try:
            for name, events in folds:
                resolver = m.registry.get(name)
                for raw in events:
                    m._apply(resolver, Event.decode(orjson.dumps(raw)))
        except ConflictError as exc:
            raise SnapshotError(f"snapshot event refused: {exc}") from exc
        m.offsets = offsets
        return m


def _read_snapshot(data: bytes) -> tuple[dict[str, int], list[tuple[str, list[Any]]]]:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SnapshotError(f"snapshot is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"not a version {SNAPSHOT_VERSION} materializer snapshot")
    offsets = doc.get("offsets")
    if not isinstance(offsets, dict) or not all(
        isinstance(v, int) and v >= 0 for v in offsets.values()
    ):
        raise SnapshotError("snapshot.offsets must map 'topic:partition' to offsets >= 0")
    folds = doc.get("folds")
    if not isinstance(folds, list) or not all(_is_fold(f) for f in folds):
        raise SnapshotError("snapshot.folds must be a list of {resolver: name, events: [...]}")
    return dict(offsets), [(f["resolver"], f["events"]) for f in folds]


def _is_fold(f: Any) -> bool:
    return (
        isinstance(f, dict)
        and isinstance(f.get("resolver"), str)
        and isinstance(f.get("events"), list)
    )
