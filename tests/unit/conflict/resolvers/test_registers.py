"""The registers (``conflict.resolvers.registers``): the seed scenario resolves the same way
everywhere; field-lww keeps concurrent edits of different fields."""

from __future__ import annotations

import pytest

from conflict import (
    BUILTIN,
    HLC,
    Event,
    resolve,
    state_bytes,
)
from conflict.ids import new_id

pytestmark = pytest.mark.unit


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
