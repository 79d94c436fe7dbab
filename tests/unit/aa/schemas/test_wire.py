"""Schema-id translation, the pure parts (issue 34): only the 4 id bytes of a framed key or
value change; unframed and null ones are copied as they are; a refused id refuses its record;
the ids topic's records round-trip and are believed only for the registries they name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aa.protocols import SchemaRefusal
from aa.schemas import store
from aa.schemas.wire import HEADER, IdTable, header, schema_id, topic_translation

pytestmark = pytest.mark.unit

IDS = st.integers(min_value=0, max_value=2**31 - 1)
PAYLOADS = st.binary(max_size=64)


def _table(pairs: dict[int, int]) -> IdTable:
    return IdTable({header(s): header(t) for s, t in pairs.items()})


@given(source=IDS, target=IDS, key=PAYLOADS, value=PAYLOADS)
def test_only_the_four_id_bytes_of_framed_keys_and_values_change(
    source: int, target: int, key: bytes, value: bytes
) -> None:
    t = topic_translation(_table({source: target}), keys=True, values=True)
    out = t(header(source) + key, header(source) + value)
    assert not isinstance(out, SchemaRefusal)
    new_key, new_value = out
    assert new_key == header(target) + key
    assert new_value == header(target) + value
    assert schema_id(new_value) == target


@given(
    data=st.one_of(
        st.none(), st.binary(max_size=4), st.binary(min_size=1).filter(lambda b: b[0] != 0)
    )
)
def test_null_short_and_unframed_bytes_are_copied_as_they_are(data: bytes | None) -> None:
    t = topic_translation(_table({}), keys=True, values=True)
    assert t(data, data) == (data, data)
    assert IdTable().missing([data]) == set()


def test_a_topic_translates_only_what_is_framed_there() -> None:
    table = _table({7: 70})
    framed = header(7) + b"x"
    values_only = topic_translation(table, keys=False, values=True)
    assert values_only(framed, framed) == (framed, header(70) + b"x")
    keys_only = topic_translation(table, keys=True, values=False)
    assert keys_only(framed, framed) == (header(70) + b"x", framed)


def test_a_refused_id_refuses_the_record() -> None:
    refusal = SchemaRefusal("schema-unknown", "schema id 9: not found")
    table = _table({7: 70})
    table.headers[header(9)] = refusal
    t = topic_translation(table, keys=True, values=True)
    assert t(header(9) + b"k", header(7) + b"v") is refusal  # the key's
    assert t(header(7) + b"k", header(9) + b"v") is refusal  # the value's


def test_an_id_never_resolved_is_a_defect_not_a_copy() -> None:
    t = topic_translation(_table({}), keys=False, values=True)
    with pytest.raises(KeyError):
        t(None, header(5) + b"v")


def test_missing_lists_each_unknown_framed_id_once() -> None:
    table = _table({1: 10})
    values = [header(1) + b"a", header(2) + b"b", header(2) + b"c", None, b"plain", header(3)]
    assert table.missing(values) == {2, 3}
    assert len(header(3)) == HEADER


def test_the_ids_topic_records_round_trip_for_their_registries_only() -> None:
    key, value = store.encode("http://sf:8081", "http://nyc:8081", 12, 345)
    assert store.decode(key, value, "http://sf:8081", "http://nyc:8081") == (12, 345)
    # written for other registries (the flow's URLs changed): not believed
    assert store.decode(key, value, "http://sf2:8081", "http://nyc:8081") is None
    assert store.decode(key, value, "http://sf:8081", "http://lon:8081") is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"{}"),
        (b"1", None),
        (b"x", b'{"source": "s", "target": "t", "target_id": 3}'),
        (b"1", b"[]"),
        (b"1", b'{"source": "s", "target": "t", "target_id": "3"}'),
        (b"1", b"not json"),
    ],
)
def test_a_record_aa_did_not_write_in_the_ids_topic_is_refused_by_the_reader(
    key: bytes | None, value: bytes | None
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the reader skips any ValueError
        store.decode(key, value, "s", "t")
