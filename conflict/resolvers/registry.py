"""Resolver selection (per topic, per event type) and the pure ``resolve`` function."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from conflict.envelope import Event
from conflict.errors import ResolverError
from conflict.resolvers.crdts import CounterResolver, DocumentResolver, SetResolver
from conflict.resolvers.registers import FieldLWWResolver, LWWResolver, MultiValueResolver
from conflict.types import Resolver

BUILTIN: dict[str, Resolver] = {
    r.name: r
    for r in (
        LWWResolver(),
        FieldLWWResolver(),
        MultiValueResolver(),
        CounterResolver(),
        SetResolver(),
        DocumentResolver(),
    )
}


class UserFunctionResolver:
    """A resolver from a pure function of the sorted, deduplicated events of one key."""

    def __init__(
        self, name: str, fn: Callable[[Sequence[Event]], Any], types: Iterable[str] | None = None
    ) -> None:
        self.name = name
        self._fn = fn
        self._types = frozenset(types) if types is not None else None

    def validate(self, event: Event) -> None:
        if self._types is not None and event.type not in self._types:
            raise ResolverError(
                f"event {event.id}: resolver {self.name} accepts {sorted(self._types)}, "
                f"not {event.type!r}"
            )

    def value(self, events: Sequence[Event]) -> Any:
        return self._fn(events)


def canonical(events: Iterable[Event]) -> list[Event]:
    """Deduplicated by id, sorted by (HLC, id): what every resolver folds."""
    return sorted({e.id: e for e in events}.values(), key=lambda e: e.order)


def resolve(resolver: Resolver, events: Iterable[Event]) -> Any:
    """The state of one key from its events, in any order and with any duplicates."""
    return resolver.value(canonical(events))


def state_bytes(value: Any) -> bytes:
    """The canonical encoding of a resolved state (sorted keys): equal states, equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def state_hash(value: Any) -> str:
    return hashlib.sha256(state_bytes(value)).hexdigest()


class ResolverRegistry:
    """Which resolver applies to an event: by event type first, then by topic, then default.

    Topic rules match the *logical* topic (``SF.users`` and ``users`` are both ``users``).
    """

    def __init__(
        self,
        default: str = "lww",
        *,
        by_topic: Mapping[str, str] | None = None,
        by_type: Mapping[str, str] | None = None,
        user: Iterable[Resolver] = (),
    ) -> None:
        self._resolvers: dict[str, Resolver] = dict(BUILTIN)
        for r in user:
            self._resolvers[r.name] = r
        self.default = default
        self.by_topic = dict(by_topic or {})
        self.by_type = dict(by_type or {})
        for name in (default, *self.by_topic.values(), *self.by_type.values()):
            self.get(name)

    def register(self, resolver: Resolver) -> None:
        self._resolvers[resolver.name] = resolver

    def get(self, name: str) -> Resolver:
        try:
            return self._resolvers[name]
        except KeyError:
            raise ResolverError(
                f"unknown resolver {name!r}; known: {', '.join(sorted(self._resolvers))}"
            ) from None

    def for_event(self, logical_topic: str, event_type: str) -> Resolver:
        name = self.by_type.get(event_type) or self.by_topic.get(logical_topic) or self.default
        return self.get(name)
