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
from conflict.types import ResolvedState, Resolver, S

BUILTIN: dict[str, Resolver[Any]] = {
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
    """A resolver from a pure function of one key's events, deduplicated by id and sorted by
    (HLC, DC, id); ``types`` limits the event types it accepts. State: the events by id."""

    def __init__(
        self,
        name: str,
        fn: Callable[[Sequence[Event]], ResolvedState],
        types: Iterable[str] | None = None,
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

    def empty(self) -> dict[str, Event]:
        return {}

    def add(self, state: dict[str, Event], event: Event) -> dict[str, Event]:
        state[event.id] = event
        return state

    def merge(self, a: dict[str, Event], b: dict[str, Event]) -> dict[str, Event]:
        return a | b

    def value(self, state: dict[str, Event]) -> ResolvedState:
        return self._fn(sorted(state.values(), key=lambda e: e.order))


def canonical(events: Iterable[Event]) -> list[Event]:
    """Deduplicated by id, sorted by (HLC, DC, id): the same list in every DC."""
    return sorted({e.id: e for e in events}.values(), key=lambda e: e.order)


def get_resolver(resolver: Resolver[Any] | str) -> Resolver[Any]:
    """``resolver`` itself, or the built-in resolver of that name (:class:`ResolverError` if
    there is none)."""
    if not isinstance(resolver, str):
        return resolver
    try:
        return BUILTIN[resolver]
    except KeyError:
        raise ResolverError(
            f"unknown resolver {resolver!r}; built-in: {', '.join(sorted(BUILTIN))}"
        ) from None


def fold(resolver: Resolver[S], events: Iterable[Event]) -> S:
    """The resolver state of ``events`` (each validated first; :class:`ResolverError` names
    the first event the resolver cannot use)."""
    state = resolver.empty()
    for e in events:
        resolver.validate(e)
        state = resolver.add(state, e)
    return state


def resolve(resolver: Resolver[Any] | str, events: Iterable[Event]) -> ResolvedState:
    """The resolved value of one key from its events, in any order and with any duplicates.

    Pure and Kafka-free: ``resolve("lww", [Event.decode(v, h) for v, h in records])`` is what a
    Spark job runs per key. ``resolver`` is a resolver or a built-in name.
    """
    chosen = get_resolver(resolver)
    return chosen.value(fold(chosen, events))


def state_bytes(value: Any) -> bytes:
    """The canonical encoding of a resolved state (sorted keys): equal states, equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def state_hash(value: Any) -> str:
    """SHA-256 (hex) of :func:`state_bytes`."""
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
        user: Iterable[Resolver[Any]] = (),
    ) -> None:
        self._resolvers: dict[str, Resolver[Any]] = dict(BUILTIN)
        for r in user:
            self._resolvers[r.name] = r
        self.default = default
        self.by_topic = dict(by_topic or {})
        self.by_type = dict(by_type or {})
        for name in (default, *self.by_topic.values(), *self.by_type.values()):
            self.get(name)

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], user: Iterable[Resolver[Any]] = ()
    ) -> ResolverRegistry:
        """From a mapping such as parsed YAML::

            default: lww
            topics: {carts: multi-value, docs: document}
            types: {inc: counter, dec: counter}

        Unknown keys and unknown resolver names raise :class:`ResolverError` naming the field.
        """
        unknown = sorted(set(config) - {"default", "topics", "types"})
        if unknown:
            raise ResolverError(f"resolvers.{unknown[0]}: unknown key; use default, topics, types")
        default = config.get("default", "lww")
        if not isinstance(default, str):
            raise ResolverError(f"resolvers.default: expected a resolver name, got {default!r}")
        tables: dict[str, dict[str, str]] = {}
        for field in ("topics", "types"):
            table = config.get(field) or {}
            if not isinstance(table, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in table.items()
            ):
                raise ResolverError(f"resolvers.{field}: expected a mapping of name -> resolver")
            tables[field] = dict(table)
        registry = cls(user=user)
        for field, table in (("default", {"": default}), *tables.items()):
            for name, resolver in table.items():
                if resolver not in registry._resolvers:
                    where = f"resolvers.{field}" + (f".{name}" if name else "")
                    raise ResolverError(
                        f"{where}: unknown resolver {resolver!r}; "
                        f"known: {', '.join(sorted(registry._resolvers))}"
                    )
        registry.default = default
        registry.by_topic = tables["topics"]
        registry.by_type = tables["types"]
        return registry

    def register(self, resolver: Resolver[Any]) -> None:
        self._resolvers[resolver.name] = resolver

    def get(self, name: str) -> Resolver[Any]:
        try:
            return self._resolvers[name]
        except KeyError:
            raise ResolverError(
                f"unknown resolver {name!r}; known: {', '.join(sorted(self._resolvers))}"
            ) from None

    def for_event(self, logical_topic: str, event_type: str) -> Resolver[Any]:
        name = self.by_type.get(event_type) or self.by_topic.get(logical_topic) or self.default
        return self.get(name)
