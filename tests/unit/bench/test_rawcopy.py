"""``bench.rawcopy``, the W1 runner that writes fetched batches unchanged: only the header
fields a producer owns change, so the target gets the source's records byte for byte."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from aa.kafka.records import BATCH_HEADER, CODECS, RawBatch
from bench.configs import Tuning
from bench.rawcopy import WholeBatch, producer_owned, sequence_span, whole_batches
from bench.replicators import rawcopy_deployment
from bench.report import ratios, table

pytestmark = pytest.mark.unit


def _source_batch(codec: str, *, transactional: bool) -> bytes:
    """A batch as a source broker serves it: offsets and a leader epoch assigned, a producer's
    id, epoch and sequence, records with keys, values, headers and spread timestamps."""
    builder = DefaultRecordBatchBuilder(2, CODECS[codec], transactional, 9, 2, 40, 1 << 20)
    for i in range(50):
        key = None if i % 7 == 0 else b"k%d" % i
        builder.append(i, 1_700_000_000_000 + 3 * i, key, b"v" * (i + 1), [("h", b"%d" % i)])
    out = bytearray(builder.build())
    struct.pack_into(">q", out, 0, 12_345)  # base offset
    struct.pack_into(">i", out, 12, 6)  # partition leader epoch
    return bytes(out)


def _records(batch: DefaultRecordBatch) -> list[tuple[object, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
@pytest.mark.parametrize("transactional", [False, True])
def test_a_copied_batch_holds_the_source_records_unchanged_under_the_copiers_producer_state(
    codec: str, transactional: bool
) -> None:
    source = _source_batch(codec, transactional=transactional)
    copied = producer_owned(memoryview(source), 77, 3, 1_000)
    got, was = DefaultRecordBatch(bytes(copied)), DefaultRecordBatch(source)
    assert got.validate_crc()
    assert (got.producer_id, got.producer_epoch, got.base_sequence) == (77, 3, 1_000)
    assert not got.is_transactional
    assert got.base_offset == 0
    assert struct.unpack_from(">i", copied, 12)[0] == -1  # no leader epoch: the broker's
    assert got.compression_type == CODECS[codec]
    assert copied[BATCH_HEADER:] == source[BATCH_HEADER:]  # the records, byte for byte
    assert _records(got) == [(r[0] - 12_345, *r[1:]) for r in _records(was)]
    assert (got.first_timestamp, got.max_timestamp) == (was.first_timestamp, was.max_timestamp)


def test_the_producer_numbers_a_whole_batch_by_its_offset_span() -> None:
    source = _source_batch("none", transactional=False)
    batch = WholeBatch(source)
    assert sequence_span(source) == batch.record_count() == 50
    assert batch.closed()  # sent without lingering
    batch._set_producer_state(5, 0, 50)
    built = DefaultRecordBatch(bytes(batch._build()))
    assert (built.producer_id, built.base_sequence) == (5, 50)
    assert batch._build() is batch._build()  # built once: a retry sends the same bytes


def test_a_producer_that_is_not_idempotent_sends_it_without_producer_state() -> None:
    built = DefaultRecordBatch(
        bytes(WholeBatch(_source_batch("none", transactional=False))._build())
    )
    assert (built.producer_id, built.producer_epoch, built.base_sequence) == (-1, -1, -1)
    assert built.validate_crc()


def test_a_fetched_item_that_is_not_a_whole_batch_stops_the_copy_saying_which() -> None:
    tp = TopicPartition("t", 3)
    raw = RawBatch(memoryview(b"x" * BATCH_HEADER), 10, 20, 0)
    assert whole_batches(tp, [raw]) == [raw]

    class Decoded:
        offset = 20

    with pytest.raises(SystemExit, match=r"t/3 gave Decoded at offset 20"):
        whole_batches(tp, [raw, Decoded()])


def test_rawcopy_fetches_with_the_replicators_fetch_sizes(tmp_path: Path) -> None:
    tuning = Tuning(max_poll_records=7, fetch_max_bytes=8, max_partition_fetch_bytes=9)
    dep = rawcopy_deployment(tmp_path, "s:1", "t:2", "bench-w1-rawcopy-x", tuning)
    (spec,) = dep.specs
    argv = " ".join(spec.argv)
    assert "-m bench.rawcopy --source s:1 --target t:2 --topic bench-w1-rawcopy-x" in argv
    assert "--max-poll-records 7 --fetch-max-bytes 8 --max-partition-fetch-bytes 9" in argv


def test_aa_is_reported_against_rawcopy_with_each_copys_target_broker_cpu() -> None:
    row = {"records_per_s": 100.0, "records_per_cpu_s": 400.0, "mb_per_s": 0.05}
    w = {
        "W1": {
            "records": 10, "record_size": 512, "partitions": 6,
            "aa": {**row, "records_per_s": 80.0, "broker_cpu_s": {"SF": 1.0, "NYC": 3.0}},
            "rawcopy": {**row, "broker_cpu_s": {"SF": 0.5, "NYC": 2.0}},
        }
    }  # fmt: skip
    ratios(w)
    assert w["W1"]["ratios"]["aa/rawcopy records_per_s"] == 0.8
    assert w["W1"]["ratios"]["aa/rawcopy records_per_cpu_s"] == 1.0
    text = table(w)
    assert "| rawcopy | 100 |" in text
    assert "target broker CPU s over the copy: aa 3.0, rawcopy 2.0" in text
