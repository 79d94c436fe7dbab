"""Provenance headers: encoding round-trips, strict decoding, forwarding semantics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aa import provenance as pv
from aa.errors import ProvenanceError

pytestmark = pytest.mark.unit

dc = st.from_regex(pv.DC_NAME, fullmatch=True)
topic = st.from_regex(r"[A-Za-z0-9._-]{1,40}", fullmatch=True)
src = st.builds(pv.SourceRef, dc, topic, st.integers(0, 10_000), st.integers(0, 2**62))


@given(origin=dc, hops=st.lists(dc, max_size=5), ref=src)
def test_headers_round_trip(origin: str, hops: list[str], ref: pv.SourceRef) -> None:
    p = pv.Provenance(origin, (origin, *hops), ref)
    assert pv.read(p.headers()) == p


def test_local_record_has_no_provenance() -> None:
    p = pv.read([("trace", b"x")])
    assert p == pv.LOCAL
    assert p.is_local


def test_forwarding_a_local_record_sets_origin_path_and_src() -> None:
    ref = pv.SourceRef("SF", "users", 2, 41)
    fwd = pv.LOCAL.forwarded("SF", "NYC", ref)
    assert fwd == pv.Provenance("SF", ("SF", "NYC"), ref)
    again = fwd.forwarded("NYC", "LON", pv.SourceRef("NYC", "users", 0, 7))
    assert again == pv.Provenance("SF", ("SF", "NYC", "LON"), ref)  # src never rewritten
    assert not again.looped
    assert again.has_visited("NYC")
    assert again.forwarded("LON", "SF", ref).looped


def test_with_provenance_keeps_app_headers_in_order_and_replaces_ours() -> None:
    p = pv.Provenance("SF", ("SF", "NYC"), pv.SourceRef("SF", "t", 0, 1))
    headers = [("a", b"1"), ("aa-origin", b"LON"), ("aa-ts", b"5"), ("a", b"2")]
    assert pv.with_provenance(headers, p) == [("a", b"1"), ("a", b"2"), *p.headers()]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ([("aa-origin", b"\xff\xfe")], "not UTF-8"),
        ([("aa-origin", b"S F")], "not a DC name"),
        ([("aa-origin", None)], "has no value"),
        ([("aa-origin", b"SF"), ("aa-origin", b"NYC")], "more than once"),
        ([("aa-path", b"SF,NYC")], "without aa-origin"),
        ([("aa-origin", b"SF"), ("aa-path", b"NYC,SF")], "must start with the origin"),
        ([("aa-origin", b"SF"), ("aa-path", b"SF,,NYC")], "not a DC name"),
        ([("aa-origin", b"SF"), ("aa-src", b"SF/users/0")], "dc/topic/partition/offset"),
        ([("aa-origin", b"SF"), ("aa-src", b"SF/users/x/1")], "must be integers"),
        ([("aa-origin", b"SF"), ("aa-src", b"SF/users/0/-1")], "negative"),
    ],
)
def test_malformed_headers_raise_with_the_cause(
    headers: list[tuple[str, bytes | None]], message: str
) -> None:
    with pytest.raises(ProvenanceError, match=message):
        pv.read(headers)


def test_check_dc_name() -> None:
    assert pv.check_dc_name("eu-west_1") == "eu-west_1"
    with pytest.raises(ValueError, match="invalid DC name"):
        pv.check_dc_name("SF.users")


@given(
    source=dc,
    target=dc,
    t=topic,
    partition=st.integers(0, 99),
    offset=st.integers(0, 2**40),
    app=st.lists(
        st.tuples(st.sampled_from(["x", "trace", "h"]), st.binary(max_size=8)), max_size=3
    ),
)
def test_local_stamp_equals_the_general_path(
    source: str, target: str, t: str, partition: int, offset: int, app: list[tuple[str, bytes]]
) -> None:
    assert not pv.has_mirror_headers(app)
    slow = pv.with_provenance(
        app, pv.LOCAL.forwarded(source, target, pv.SourceRef(source, t, partition, offset))
    )
    assert pv.LocalStamp(source, target, t, partition).headers(offset, app) == slow
