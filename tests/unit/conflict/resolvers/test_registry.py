"""Every built-in resolver (``conflict.resolvers.registry``) gives the same state for the same set
of events, whatever the order and the duplicates, and merges associatively; ``resolve``,
user functions and the registry's configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conflict import (
    BUILTIN,
    HLC,
    Event,
    Materializer,
    Resolver,
    ResolverError,
    ResolverRegistry,
    UserFunctionResolver,
    fold,
    resolve,
    state_bytes,
)
from conflict.ids import new_id
from tests.helpers.conflict import Writers, ev, yjs

pytestmark = pytest.mark.unit


DCS = ("SF", "NYC", "LON")


def _payload(name: str, draw: Callable[[Any], Any], i: int, writers: Writers) -> tuple[str, Any]:
    if name == "counter":
        return draw(st.sampled_from(["inc", "dec"])), {"by": draw(st.integers(0, 9))}
    if name == "set":
        return draw(st.sampled_from(["add", "remove"])), {"element": draw(st.integers(0, 4))}
    if name == "document":
        if draw(st.booleans()):
            return "yjs", writers.edit(draw(st.integers(0, 2)), draw(st.sampled_from("abc")), i)
        return "yjs", {"update": yjs(draw(st.sampled_from("abc")), i, 1000 + i)}
    if name == "field-lww":
        if draw(st.integers(0, 5)) == 0:
            return "delete", None
        return "patch", draw(
            st.dictionaries(
                st.sampled_from("xyz"), st.one_of(st.none(), st.integers(0, 9)), max_size=2
            )
        )
    return draw(st.sampled_from(["set", "set", "delete"])), draw(st.integers(0, 9))


@st.composite
def event_sets(draw: Callable[[Any], Any], name: str) -> list[Event]:
    n = draw(st.integers(1, 10))
    writers = Writers()
    events: list[Event] = []
    for i in range(n):
        type_, payload = _payload(name, draw, i, writers)
        seen = tuple(e.id for e in events if draw(st.booleans()))
        events.append(
            ev(
                i,
                draw(st.sampled_from(DCS)),
                draw(st.integers(1000, 1003)),
                draw(st.integers(0, 2)),
                type_,
                payload,
                seen,
            )
        )
    return events


RESOLVERS = sorted(BUILTIN)


@pytest.mark.parametrize("name", RESOLVERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_order_any_duplicates_same_state(name: str, data: st.DataObject) -> None:
    events = data.draw(event_sets(name))
    with_dupes = events + data.draw(st.lists(st.sampled_from(events), max_size=4))
    shuffled = data.draw(st.permutations(with_dupes))
    assert state_bytes(resolve(name, shuffled)) == state_bytes(resolve(name, events))


def _value_bytes(resolver: Resolver[Any], state: Any) -> bytes:
    return state_bytes(resolver.value(state))


@pytest.mark.parametrize("name", RESOLVERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_merge_is_associative_commutative_idempotent(name: str, data: st.DataObject) -> None:
    """Three DCs' partial folds, over overlapping subsets in any order, merge to the fold of
    the union; merging never changes its inputs."""
    resolver = BUILTIN[name]
    events = data.draw(event_sets(name))
    parts = [
        data.draw(st.permutations(data.draw(st.lists(st.sampled_from(events), max_size=8))))
        for _ in range(3)
    ]
    # every event is somewhere; some are in several parts (a DC that saw it twice)
    parts[data.draw(st.integers(0, 2))].extend(events)
    a, b, c = (fold(resolver, p) for p in parts)
    before = [_value_bytes(resolver, s) for s in (a, b, c)]
    left = resolver.merge(resolver.merge(a, b), c)
    right = resolver.merge(a, resolver.merge(b, c))
    whole = _value_bytes(resolver, fold(resolver, events))
    assert _value_bytes(resolver, left) == _value_bytes(resolver, right) == whole
    assert _value_bytes(resolver, resolver.merge(b, a)) == _value_bytes(
        resolver, a_b := resolver.merge(a, b)
    )
    assert _value_bytes(resolver, resolver.merge(a_b, a_b)) == _value_bytes(resolver, a_b)
    assert [_value_bytes(resolver, s) for s in (a, b, c)] == before


@pytest.mark.parametrize("name", RESOLVERS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_materializer_matches_resolve_in_any_order(name: str, data: st.DataObject) -> None:
    events = data.draw(event_sets(name))
    stream = data.draw(st.permutations(events + data.draw(st.lists(st.sampled_from(events)))))
    seen: list[Any] = []
    m = Materializer(ResolverRegistry(default=name))
    m.on_change(lambda key, value: seen.append(value))
    new = [m.apply(e) for e in stream]
    assert sum(new) == len(events)  # each duplicate id was recognised
    assert state_bytes(m.get("k")) == state_bytes(resolve(name, events))
    if seen:
        assert state_bytes(seen[-1]) == state_bytes(m.get("k"))  # callbacks saw the final value
    restored = Materializer.from_snapshot(m.snapshot(), ResolverRegistry())
    assert restored.state_bytes() == m.state_bytes()


def test_user_function() -> None:
    longest = UserFunctionResolver(
        "longest", lambda es: max(es, key=lambda e: len(e.payload)).payload
    )
    evs = [Event(new_id(), "k", "set", "SF", HLC(i, 0, "SF"), "x" * i) for i in (3, 1, 2)]
    assert resolve(longest, evs) == "xxx"


@pytest.mark.parametrize(
    ("name", "event", "message"),
    [
        ("counter", ("mul", {"by": 2}), "counter accepts inc or dec, not 'mul'"),
        ("counter", ("inc", {"by": "2"}), "counter payload must be"),
        ("set", ("add", {"elem": 1}), "set payload must be"),
        ("field-lww", ("patch", [1]), "needs a JSON object payload"),
        ("document", ("yjs", {"update": "bm90IGEgeWpzIHVwZGF0ZQ=="}), "not a valid Yjs update"),
        ("document", ("yjs", {"update": "%%%"}), "not base64"),
        ("document", ("text", {"update": ""}), "document accepts yjs"),
    ],
)
def test_bad_events_are_refused_with_the_reason(
    name: str, event: tuple[str, Any], message: str
) -> None:
    type_, payload = event
    with pytest.raises(ResolverError, match=message):
        BUILTIN[name].validate(Event(new_id(), "k", type_, "SF", HLC(1, 0, "SF"), payload))


def test_resolve_takes_a_name_and_validates_every_event() -> None:
    e = Event(new_id(), "k", "yjs", "SF", HLC(1, 0, "SF"), {"update": "bm90IHlqcw=="})
    with pytest.raises(ResolverError, match="not a valid Yjs update"):
        resolve("document", [e])
    with pytest.raises(ResolverError, match="unknown resolver 'nope'; built-in: counter"):
        resolve("nope", [e])
    assert resolve("lww", []) is None


def test_registry_from_config_chooses_by_type_then_topic() -> None:
    longest = UserFunctionResolver("longest", lambda es: es[-1].payload)
    registry = ResolverRegistry.from_config(
        {"default": "multi-value", "topics": {"docs": "document"}, "types": {"inc": "counter"}},
        user=[longest],
    )
    assert registry.for_event("docs", "inc").name == "counter"
    assert registry.for_event("docs", "yjs").name == "document"
    assert registry.for_event("users", "set").name == "multi-value"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"topic": {}}, r"resolvers\.topic: unknown key"),
        ({"default": 3}, r"resolvers\.default: expected"),
        ({"topics": ["a"]}, r"resolvers\.topics: expected a mapping"),
        ({"types": {"inc": "sum"}}, r"resolvers\.types\.inc: unknown resolver 'sum'"),
    ],
)
def test_registry_config_errors_name_the_field(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ResolverError, match=message):
        ResolverRegistry.from_config(config)
