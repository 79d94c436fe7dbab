"""Envelope encoding, strict decoding, HLC, materializer."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conflict import (
    HLC,
    Clock,
    ClockSkewError,
    DecodeError,
    Event,
    Materializer,
    ResolverError,
    ResolverRegistry,
    SnapshotError,
)
from conflict.ids import is_id, new_id

pytestmark = pytest.mark.unit


# generation and examples take wall time: a loaded machine must not fail them
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.text(min_size=1, max_size=20),
    payload=st.recursive(
        st.none() | st.integers(-1000, 1000) | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
        max_leaves=6,
    ),
)
def test_round_trip(key: str, payload: object) -> None:
    e = Event(new_id(), key, "set", "SF", HLC(1_700_000_000_000, 3, "SF"), payload, (new_id(),))
    k, v, headers = e.encode()
    assert k == key.encode()
    assert Event.decode(v, headers) == e


def _value(**over: object) -> bytes:
    doc = {
        "id": new_id(),
        "key": "alice",
        "type": "set",
        "origin": "SF",
        "hlc": "1700000000000:0:SF",
        "payload": {"book": "A"},
    }
    doc.update(over)
    return orjson.dumps({k: v for k, v in doc.items() if v is not ...})


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (_value()[:-7], "value"),  # truncated JSON
        (b"[1, 2]", "value"),
        (None, "value"),
        (_value(key=...), "key"),  # missing key
        (_value(key=""), "key"),
        (_value(type=5), "type"),
        (_value(id="nope"), "id"),
        (_value(hlc="12:x:SF"), "hlc"),
        (_value(hlc="12:0:NYC"), "hlc"),  # HLC DC is not the origin
        (_value(supersedes=["x"]), "supersedes"),
    ],
)
def test_malformed_envelopes_name_the_field(value: bytes | None, field: str) -> None:
    with pytest.raises(DecodeError) as info:
        Event.decode(value)
    assert info.value.field == field
    assert str(info.value).startswith(f"event.{field}:")


def test_headers_must_agree_with_the_value() -> None:
    with pytest.raises(DecodeError, match=r"headers\.event-origin"):
        Event.decode(_value(), [("event-origin", b"NYC")])


def test_hlc_is_monotonic_and_survives_restart() -> None:
    t = [1000]
    clock = Clock("SF", now=lambda: t[0])
    a, b = clock.tick(), clock.tick()
    t[0] = 900  # the wall clock steps back
    c = clock.tick()
    assert a < b < c
    restarted = Clock("SF", last=c, now=lambda: 800)
    assert restarted.tick() > c
    assert clock.observe(HLC(5000, 7, "NYC")) > HLC(5000, 7, "NYC")


def test_hlc_far_in_the_future_is_refused() -> None:
    clock = Clock("SF", now=lambda: 1_000_000, max_drift_ms=60_000)
    with pytest.raises(ClockSkewError, match="ahead of SF's clock"):
        clock.observe(HLC(1_000_000 + 3_600_000, 0, "NYC"))


def test_ids_sort_by_time() -> None:
    a, b = new_id(1000), new_id(2000)
    assert is_id(a)
    assert a < b


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


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"supercedes": []}, "supercedes"),  # a typo must not silently lose its meaning
        ({"origin": "S,F", "hlc": "1:0:S,F"}, "origin"),
        ({"hlc": "+5:0:SF"}, "hlc"),
        ({"hlc": "1_000:0:SF"}, "hlc"),
        ({"hlc": f"{1 << 48}:0:SF"}, "hlc"),
        ({"hlc": "5:0:"}, "hlc"),
    ],
)
def test_strict_fields(over: dict[str, object], field: str) -> None:
    with pytest.raises(DecodeError) as info:
        Event.decode(_value(**over))
    assert info.value.field == field


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
