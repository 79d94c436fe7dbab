"""The native decoder (``spark_reconcile.native_decode``) accepts only what conflict's
``Event.decode`` accepts, with the same id and key."""

from __future__ import annotations

from typing import Any

import pytest

from spark_reconcile.records import normalise
from spark_reconcile.source import raw_schema
from tests.helpers.reconcile import (
    RESOLVERS,
    T0,
    WINDOW,
    event_value,
)

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def test_native_event_decode_agrees_with_conflicts_decoder(spark: Any) -> None:
    """The native fast path accepts only what ``Event.decode`` accepts, with the same id and
    key; every other row gets the Python decoder's verdict (an id or its exact error)."""
    from conflict import ConflictError, Event

    good = event_value("k", (T0, 0, "SF"), {"a": [1, "x"]})
    ev = Event.decode(good)
    _, value, headers = ev.encode()
    sup = Event(ev.id, "k", "set", "SF", ev.hlc, 1, (ev.id,)).encode()[1]
    variants: list[tuple[bytes | None, tuple[tuple[str, bytes], ...]]] = [
        (value, tuple(headers)),  # as conflict writes it, with its headers
        (good, ()),
        (sup, ()),  # supersedes
        (value.replace(b'"key":"k"', b'"key":"k\\u00e9"'), ()),  # an escape: Python decides
        (value.replace(b'"key":"k"', b'"key":5'), ()),  # not a string
        (value.replace(b'"key":"k"', b'"key":""'), ()),  # empty
        (value[:-1] + b',"extra":1}', ()),  # unknown field
        (value[:-1] + b',"key":"other"}', ()),  # a field twice
        (value.replace(b'"payload":', b'"payload":\n'), ()),  # whitespace
        (value, (("event-id", b"01ARZ3NDEKTSV4RRFFQ69G5FAV"),)),  # header disagrees
        (value.replace(b":0:SF", b":0:NYC"), ()),  # HLC DC is not the origin
        (value.replace(f'"hlc":"{T0}'.encode(), b'"hlc":"999999999999999'), ()),  # > 48 bits
        (value + b" x", ()),  # trailing garbage
        (b'{"id": "broken', ()),
        (None, ()),
    ]
    rows = [
        ("SF", "users", "users", 0, i, b"k", v, T0, [list(h) for h in hs])
        for i, (v, hs) in enumerate(variants)
    ]
    df = spark.createDataFrame(rows, raw_schema()).transform(normalise(WINDOW, 60_000, RESOLVERS))
    got = {r.offset: (r.event_id, r.event_key, r.event_error is None) for r in df.collect()}
    for i, (v, hs) in enumerate(variants):
        want: tuple[str | None, str | None, bool]
        try:
            e = Event.decode(v, list(hs))
            want = (e.id, e.key, True)
        except ConflictError:
            want = (None, None, False)
        assert got[i] == want, (i, v)
    fast = df.filter("not needs_slow").select("offset").collect()
    # only conflict's own layout (whitespace inside the payload is fine) takes the fast path
    assert {r.offset for r in fast} == {0, 1, 2, 8}


def test_hlc_with_leading_zeros_and_agreeing_header_is_refused_like_conflicts_decoder(
    spark: Any,
) -> None:
    """``Event.decode`` compares an ``event-hlc`` header with the HLC re-encoded (no leading
    zeros), so a value written ``"hlc":"0<ms>:00:SF"`` with the same text in its header is
    refused; the native decoder compared the two texts and accepted it. The fold of suspect
    keys relies on the native verdict (it gets no headers for natively decoded rows)."""
    from conflict import ConflictError, Event

    value = event_value("k", (T0, 0, "SF"), {"a": 1})
    padded_hlc = f"0{T0}:00:SF".encode()
    padded = value.replace(f'"hlc":"{T0}:0:SF"'.encode(), b'"hlc":"' + padded_hlc + b'"')
    assert padded != value
    variants = [(padded, (("event-hlc", padded_hlc),)), (padded, ())]
    rows = [
        ("SF", "users", "users", 0, i, b"k", v, T0, [list(h) for h in hs])
        for i, (v, hs) in enumerate(variants)
    ]
    df = spark.createDataFrame(rows, raw_schema()).transform(normalise(WINDOW, 60_000, RESOLVERS))
    got = {r.offset: r.event_error is None and r.event_id is not None for r in df.collect()}
    for i, (v, hs) in enumerate(variants):
        try:
            Event.decode(v, list(hs))
            want = True
        except ConflictError:
            want = False
        assert got[i] == want, (i, v, hs, "decoded" if got[i] else "refused")


def test_payload_conflict_refuses_is_not_accepted_by_the_native_decoder(spark: Any) -> None:
    """Payloads a JSON parser lets through but ``Event.decode`` (orjson) refuses: an infinite
    number, a lone surrogate, a raw control character, single quotes. Each must be an event
    error (reported as malformed), never a decoded event."""
    from conflict import ConflictError, Event

    good = event_value("k", (T0, 0, "SF"), {"a": 1})
    payloads = [
        b"1e999",
        b"[1e308,1e309]",
        b'"\\ud800"',
        b'"a\x01b"',
        b"'a'",
        # and some it accepts, nested and flat, with whitespace, escapes and big numbers
        b'{"a":{"b":[1,2,{"c":null}]},"d":"\\u00e9\\n"}',
        b"[ 1 , -0.5e-3 , true , false , null ]",
        b"12345678901234567890123456789012345678901234567890",
        b'"\\ud83d\\ude00"',
        # long, just under and over the native decoder's size limit: no regex stack overflow
        b"[" + b",".join([b"1"] * 950) + b"]",
        b'"' + b"\\n" * 940 + b'"',
        b"[" + b",".join([b"[{}]"] * 380) + b"]",
        b"[" + b",".join([b"1"] * 3000) + b"]",
        b'"' + b"\\n" * 3000 + b'"',
    ]
    rows: list[tuple[Any, ...]] = [
        ("SF", "users", "users", 0, i, b"k", good.replace(b'{"a":1}', p), T0, [])
        for i, p in enumerate(payloads)
    ]
    df = spark.createDataFrame(rows, raw_schema()).transform(normalise(WINDOW, 60_000, RESOLVERS))
    got = {r.offset: r.event_error is None and r.event_id is not None for r in df.collect()}
    for i, (*_, value, _ts, _hs) in enumerate(rows):
        try:
            Event.decode(value)
            want = True
        except ConflictError:
            want = False
        assert got[i] == want, (i, payloads[i][:60], "decoded" if got[i] else "refused")
