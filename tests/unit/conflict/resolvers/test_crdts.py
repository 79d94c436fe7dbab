"""The CRDT resolvers (``conflict.resolvers.crdts``): set, counter, document."""

from __future__ import annotations

import pytest

from conflict import (
    BUILTIN,
    HLC,
    Event,
    Materializer,
    ResolverRegistry,
    resolve,
)
from conflict.ids import new_id
from tests.helpers.conflict import Writers, ev, yjs

pytestmark = pytest.mark.unit


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
    d1 = Event(new_id(), "d", "yjs", "SF", HLC(1, 0, "SF"), {"update": yjs("a", 1, 7)})
    d2 = Event(new_id(), "d", "yjs", "NYC", HLC(1, 0, "NYC"), {"update": yjs("b", 2, 8)})
    assert resolve(BUILTIN["document"], [d2, d1]) == {"a": 1.0, "b": 2.0}


def test_document_updates_waiting_for_a_dependency_are_not_lost() -> None:
    """Regression: pycrdt loses updates 2 and 3 of a writer applied before its update 1."""
    writers = Writers()
    payloads = [writers.edit(0, "b", 1), writers.edit(0, "a", 2), writers.edit(0, "b", 3)]
    events = [ev(i, "SF", 1000 + i, 0, "yjs", p) for i, p in enumerate(payloads)]
    expected = {"a": 2.0, "b": 3.0}
    assert resolve("document", events) == expected
    assert resolve("document", [events[1], events[2], events[0]]) == expected
    m = Materializer(ResolverRegistry(default="document"))
    for e in (events[2], events[1], events[0]):
        m.apply(e)
        m.get("k")  # reading while updates wait for their dependency changes nothing
    assert m.get("k") == expected
