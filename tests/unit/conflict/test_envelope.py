"""The event envelope (``conflict.envelope``): encoding, strict decoding naming the field."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conflict import (
    HLC,
    DecodeError,
    Event,
)
from conflict.ids import new_id

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
