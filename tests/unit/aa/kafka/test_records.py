"""aa's own record batch decoder (aa.kafka.records) and the consumer path that falls back to it
for bytes aiokafka cannot decode: header names that are not UTF-8 (as librdkafka writes them).
No broker: batches are built in memory."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka.record.default_records import (
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
    _DefaultRecordBatchBuilderPy,
)
from aiokafka.structs import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from aa.kafka import fetched, switch
from aa.kafka.records import BATCH_HEADER, RawName, decode_batch, record_bytes
from aa.mirror.restamp import RawBatch

pytestmark = pytest.mark.unit

TP = TopicPartition("t", 0)
CODECS = (0, 1, 2, 3, 4)  # none, gzip, snappy, lz4, zstd
names = st.one_of(st.text(max_size=4), st.binary(max_size=4).map(RawName))
optional = st.one_of(st.none(), st.binary(max_size=40))
records = st.lists(
    st.tuples(optional, optional, st.lists(st.tuples(names, optional), max_size=3)),
    min_size=1,
    max_size=20,
)


def _built(rows: list[Any], codec: int = 0, base: int = 0, pure: bool = True) -> bytes:
    cls = _DefaultRecordBatchBuilderPy if pure else DefaultRecordBatchBuilder
    b = cls(2, codec, 0, 7, 0, base, 1 << 22)
    for i, (key, value, headers) in enumerate(rows):
        b.append(i, 1000 + i, key, value, headers)
    out = bytearray(b.build())
    out[0:8] = struct.pack(">q", base)  # the broker sets the base offset
    return bytes(out)


@settings(max_examples=60, deadline=None)
@given(rows=records, codec=st.sampled_from(CODECS))
def test_decode_batch_reads_what_was_built_names_byte_for_byte(rows: list[Any], codec: int) -> None:
    got = decode_batch(_built(rows, codec, base=40))
    assert [r.offset for r in got] == list(range(40, 40 + len(rows)))
    assert [r.timestamp for r in got] == [1000 + i for i in range(len(rows))]
    assert [(r.key, r.value) for r in got] == [(k, v) for k, v, _ in rows]
    for r, (_, _, headers) in zip(got, rows, strict=True):
        assert [(_raw(n), v) for n, v in r.headers] == [(_raw(n), v) for n, v in headers]


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(
        st.tuples(optional, optional, st.lists(st.tuples(st.text(max_size=4), optional))),
        min_size=1,
        max_size=10,
    ),
    codec=st.sampled_from(CODECS),
)
def test_decode_batch_agrees_with_aiokafka_where_aiokafka_decodes(
    rows: list[Any], codec: int
) -> None:
    blob = _built(rows, codec, pure=False)
    ours = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in decode_batch(blob)]
    theirs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
              for r in DefaultRecordBatch(blob)]  # fmt: skip
    assert ours == theirs


def test_record_bytes_is_the_size_a_single_record_batch_takes() -> None:
    for key, value, headers in [
        (b"k", b"v", []),
        (None, None, [("a", None)]),
        (b"k" * 200, b"v" * 70_000, [("aa-src", b"x" * 300), (RawName(b"\xff\xfe"), b"")]),
    ]:
        assert len(_built([(key, value, headers)])) == BATCH_HEADER + record_bytes(
            key, value, headers
        )


def _raw(name: str) -> bytes:
    return name.raw if type(name) is RawName else name.encode()


ODD = [(RawName(b"\xff\xfekey"), b"v"), ("ok", b"1")]


def _consumer(blob: bytes, switch: switch.LeanRecords) -> Any:
    fetched.install()
    from aiokafka.consumer import fetcher  # the names install() replaced

    return fetcher.PartitionRecords(TP, fetcher.MemoryRecords(blob), [], 0, switch, None, True, 0)


BLOB = (
    _built([(b"k", b"a0", []), (b"k", b"a1", [])], base=0)
    + _built([(b"k", b"b0", []), (b"k", b"b1", ODD)], base=2)  # the second record is odd
    + _built([(b"k", b"c0", ODD)], codec=3, base=4)  # lz4
    + _built([(b"k", b"d0", [])], base=5)
)


@pytest.mark.parametrize(
    "switch",
    [switch.LeanRecords, lambda: switch.BatchSkipper("SF")],
    ids=["lean", "skipper"],
)
def test_a_batch_aiokafka_cannot_decode_is_read_whole_by_aa(switch: Any) -> None:
    records = _consumer(BLOB, switch())
    got = list(records)
    assert [r.value for r in got] == [b"a0", b"a1", b"b0", b"b1", b"c0", b"d0"]
    assert [r.offset for r in got] == list(range(6))
    assert [(_raw(n), v) for n, v in got[3].headers] == [(b"\xff\xfekey", b"v"), (b"ok", b"1")]
    assert records.next_fetch_offset == 6


def test_a_raw_batch_with_odd_names_decodes_through_aa() -> None:
    blob = _built([(b"k", b"b0", []), (b"k", b"b1", ODD)], base=8)
    got = RawBatch(blob, 9, 10, 1001).records()
    assert [(r.offset, r.value) for r in got] == [(9, b"b1")]
    assert type(got[0].headers[0][0]) is RawName
