"""Every resolver gives the same state for the same set of events, whatever the order and the
duplicates; merging is associative; the seed scenario resolves the same way everywhere."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pycrdt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conflict import BUILTIN, HLC, Event, ResolverError, UserFunctionResolver, resolve, state_bytes
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


def _payload(name: str, draw: Callable[[Any], Any], i: int) -> tuple[str, Any]:
    if name == "counter":
        return draw(st.sampled_from(["inc", "dec"])), {"by": draw(st.integers(0, 9))}
    if name == "set":
        return draw(st.sampled_from(["add", "remove"])), {"element": draw(st.integers(0, 4))}
    if name == "document":
        return "yjs", {"update": _yjs(draw(st.sampled_from("abc")), i, 1000 + i)}
    if name == "field-lww":
        return "patch", draw(
            st.dictionaries(
                st.sampled_from("xyz"), st.one_of(st.none(), st.integers(0, 9)), max_size=2
            )
        )
    return draw(st.sampled_from(["set", "delete"])), draw(st.integers(0, 9))


@st.composite
def event_sets(draw: Callable[[Any], Any], name: str) -> list[Event]:
    n = draw(st.integers(1, 8))
    events: list[Event] = []
    for i in range(n):
        type_, payload = _payload(name, draw, i)
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
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_order_any_duplicates_same_state(name: str, data: st.DataObject) -> None:
    resolver = BUILTIN[name]
    events = data.draw(event_sets(name))
    with_dupes = events + data.draw(st.lists(st.sampled_from(events), max_size=4))
    shuffled = data.draw(st.permutations(with_dupes))
    assert state_bytes(resolve(resolver, shuffled)) == state_bytes(resolve(resolver, events))


@pytest.mark.parametrize("name", RESOLVERS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_merge_is_associative(name: str, data: st.DataObject) -> None:
    resolver = BUILTIN[name]
    events = data.draw(event_sets(name))
    cut1 = data.draw(st.integers(0, len(events)))
    cut2 = data.draw(st.integers(cut1, len(events)))
    a, b, c = events[:cut1], events[cut1:cut2], events[cut2:]
    left = resolve(resolver, [*resolve_set(a, b), *c])
    right = resolve(resolver, [*a, *resolve_set(b, c)])
    assert state_bytes(left) == state_bytes(right) == state_bytes(resolve(resolver, events))


def resolve_set(x: list[Event], y: list[Event]) -> list[Event]:
    """Merging two DCs' event sets is their union (the fold is over the set)."""
    return list({e.id: e for e in [*x, *y]}.values())


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
