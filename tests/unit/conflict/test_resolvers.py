"""Every resolver gives the same state for the same set of events, whatever the order and the
duplicates; merging is associative; the seed scenario resolves the same way everywhere."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pycrdt
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
    encode_update,
    fold,
    resolve,
    state_bytes,
)
from conflict.ids import new_id

pytestmark = pytest.mark.unit

DCS = ("SF", "NYC", "LON")


def _ev(
    i: int,
    dc: str,
    ms: int,
    logical: int,
    type_: str,
    payload: Any,
    supersedes: tuple[str, ...] = (),
) -> Event:
    return Event(
        f"{new_id(ms)[:10]}{i:016d}", "k", type_, dc, HLC(ms, logical, dc), payload, supersedes
    )


def _yjs(field: str, value: int, client: int) -> str:
    doc: pycrdt.Doc[Any] = pycrdt.Doc(client_id=client)
    doc.get("root", type=pycrdt.Map)[field] = value
    return base64.b64encode(doc.get_update()).decode()


class _Writers:
    """Three document replicas that edit and emit *incremental* updates: each update depends on
    the writer's earlier ones, so a fold sees updates that must wait for their dependencies."""

    def __init__(self) -> None:
        self.docs: list[pycrdt.Doc[Any]] = [pycrdt.Doc(client_id=100 + n) for n in range(3)]

    def edit(self, writer: int, field: str, value: int) -> dict[str, str]:
        doc = self.docs[writer]
        before = doc.get_state()
        doc.get("root", type=pycrdt.Map)[field] = value
        return encode_update(doc.get_update(before))


def _payload(name: str, draw: Callable[[Any], Any], i: int, writers: _Writers) -> tuple[str, Any]:
    if name == "counter":
        return draw(st.sampled_from(["inc", "dec"])), {"by": draw(st.integers(0, 9))}
    if name == "set":
        return draw(st.sampled_from(["add", "remove"])), {"element": draw(st.integers(0, 4))}
    if name == "document":
        if draw(st.booleans()):
            return "yjs", writers.edit(draw(st.integers(0, 2)), draw(st.sampled_from("abc")), i)
        return "yjs", {"update": _yjs(draw(st.sampled_from("abc")), i, 1000 + i)}
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
    writers = _Writers()
    events: list[Event] = []
    for i in range(n):
        type_, payload = _payload(name, draw, i, writers)
        seen = tuple(e.id for e in events if draw(st.booleans()))
        events.append(
            _ev(
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


def _order(dc: str, book: str, ms: int) -> Event:
    return Event(new_id(ms), "alice", "set", dc, HLC(ms, 0, dc), {"book": book})


def test_seed_scenario_lww_one_wins_everywhere() -> None:
    sf, nyc = _order("SF", "A", 1_700_000_000_100), _order("NYC", "B", 1_700_000_000_100)
    states = {state_bytes(resolve(BUILTIN["lww"], order)) for order in ([sf, nyc], [nyc, sf])}
    assert len(states) == 1  # same winner in every DC: (HLC, DC) breaks the tie -> SF
    assert resolve(BUILTIN["lww"], [sf, nyc]) == {"book": "A"}


def test_seed_scenario_multi_value_ships_both_books() -> None:
    sf, nyc = _order("SF", "A", 1_700_000_000_100), _order("NYC", "B", 1_700_000_000_400)
    value = resolve(BUILTIN["multi-value"], [nyc, sf])
    assert [v["value"] for v in value] == [{"book": "A"}, {"book": "B"}]
    later = Event(
        new_id(),
        "alice",
        "set",
        "LON",
        HLC(1_700_000_001_000, 0, "LON"),
        {"book": "A+B"},
        (sf.id, nyc.id),
    )
    assert [v["value"] for v in resolve(BUILTIN["multi-value"], [sf, later, nyc])] == [
        {"book": "A+B"}
    ]


def test_field_lww_keeps_concurrent_edits_to_different_fields() -> None:
    a = Event(new_id(), "u", "patch", "SF", HLC(5, 0, "SF"), {"email": "a@x"})
    b = Event(new_id(), "u", "patch", "NYC", HLC(5, 0, "NYC"), {"phone": "123"})
    assert resolve(BUILTIN["field-lww"], [b, a]) == {"email": "a@x", "phone": "123"}


def test_or_set_add_wins_over_concurrent_remove() -> None:
    add1 = Event(new_id(), "s", "add", "SF", HLC(1, 0, "SF"), {"element": "x"})
    rem = Event(new_id(), "s", "remove", "NYC", HLC(2, 0, "NYC"), {"element": "x"}, (add1.id,))
    add2 = Event(new_id(), "s", "add", "LON", HLC(2, 0, "LON"), {"element": "x"})
    assert resolve(BUILTIN["set"], [add1, rem]) == []
    assert resolve(BUILTIN["set"], [add1, rem, add2]) == ["x"]


def test_counter_and_document() -> None:
    inc = Event(new_id(), "c", "inc", "SF", HLC(1, 0, "SF"), {"by": 5})
    dec = Event(new_id(), "c", "dec", "NYC", HLC(1, 0, "NYC"), {"by": 2})
    assert resolve(BUILTIN["counter"], [inc, dec, inc]) == 3
    d1 = Event(new_id(), "d", "yjs", "SF", HLC(1, 0, "SF"), {"update": _yjs("a", 1, 7)})
    d2 = Event(new_id(), "d", "yjs", "NYC", HLC(1, 0, "NYC"), {"update": _yjs("b", 2, 8)})
    assert resolve(BUILTIN["document"], [d2, d1]) == {"a": 1.0, "b": 2.0}


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


def test_document_updates_waiting_for_a_dependency_are_not_lost() -> None:
    """Regression: pycrdt loses updates 2 and 3 of a writer applied before its update 1."""
    writers = _Writers()
    payloads = [writers.edit(0, "b", 1), writers.edit(0, "a", 2), writers.edit(0, "b", 3)]
    events = [_ev(i, "SF", 1000 + i, 0, "yjs", p) for i, p in enumerate(payloads)]
    expected = {"a": 2.0, "b": 3.0}
    assert resolve("document", events) == expected
    assert resolve("document", [events[1], events[2], events[0]]) == expected
    m = Materializer(ResolverRegistry(default="document"))
    for e in (events[2], events[1], events[0]):
        m.apply(e)
        m.get("k")  # reading while updates wait for their dependency changes nothing
    assert m.get("k") == expected


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
