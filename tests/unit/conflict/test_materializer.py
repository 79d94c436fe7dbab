"""The materializer (``conflict.materializer``): idempotent, order-free, its snapshots."""

from __future__ import annotations

import pytest

from conflict import (
    HLC,
    Clock,
    ClockSkewError,
    Event,
    Materializer,
    ResolverError,
    ResolverRegistry,
    SnapshotError,
)
from conflict.ids import new_id

pytestmark = pytest.mark.unit


def test_materializer_is_idempotent_and_order_free() -> None:
    events = [
        Event(new_id(), f"k{i % 3}", "set", dc, HLC(100 + i, 0, dc), i)
        for i, dc in enumerate(["SF", "NYC", "LON"] * 4)
    ]
    m1, m2 = Materializer(), Materializer()
    changes: list[str] = []
    m1.on_change(lambda k, v: changes.append(k))
    for e in events:
        m1.apply(e)
    for e in reversed(events + events):
        m2.apply(e)
    assert m1.state_bytes() == m2.state_bytes()
    assert m1.digest() == m2.digest()
    assert changes
    restored = Materializer.from_snapshot(m1.snapshot())
    assert restored.state_bytes() == m1.state_bytes()


def test_materializer_refuses_unknown_types_and_future_clocks() -> None:
    m = Materializer(
        ResolverRegistry(by_topic={"counts": "counter"}), clock=Clock("SF", now=lambda: 1000)
    )
    with pytest.raises(ResolverError, match="counter accepts inc or dec"):
        m.apply(Event(new_id(), "k", "set", "NYC", HLC(900, 0, "NYC"), 1), "counts")
    with pytest.raises(ClockSkewError):
        m.apply(Event(new_id(), "k", "set", "NYC", HLC(10_000_000, 0, "NYC"), 1), "users")
    with pytest.raises(ResolverError, match="unknown resolver 'nope'"):
        ResolverRegistry(default="nope")


def test_snapshot_keeps_the_resolver_each_event_was_folded_by() -> None:
    """Regression: a restored snapshot re-routed events without their topic (wrong resolver)."""
    registry = ResolverRegistry(by_topic={"carts": "multi-value"})
    m = Materializer(registry)
    for dc in ("SF", "NYC"):
        m.apply(Event(new_id(), "alice", "set", dc, HLC(5, 0, dc), {"book": dc}), "carts")
    m.offsets["SF.carts:0"] = 7
    restored = Materializer.from_snapshot(m.snapshot(), registry)
    assert restored.state_bytes() == m.state_bytes()
    assert len(restored.get("alice")) == 2
    assert restored.offsets == {"SF.carts:0": 7}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "not JSON"),
        (b'{"version": 9}', "not a version 1"),
        (b'{"version": 1, "offsets": {"t:0": -1}, "folds": []}', "offsets"),
        (b'{"version": 1, "offsets": {}, "folds": [{"events": []}]}', "folds"),
        (
            b'{"version": 1, "offsets": {}, "folds": [{"resolver": "mine", "events": []}]}',
            "unknown resolver 'mine'",
        ),
        (
            b'{"version": 1, "offsets": {}, "folds": [{"resolver": "lww", "events": [{}]}]}',
            r"event\.origin: missing",
        ),
    ],
)
def test_bad_snapshots_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        Materializer.from_snapshot(data)
