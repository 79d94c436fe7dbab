"""Skipping mirror-written record batches (aa.kafka.fetched) on aiokafka's own decoding path,
with record batches built in memory: no broker."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import pytest
from aiokafka.consumer.fetcher import PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

from aa.kafka import fetched, switch
from aa.provenance import BATCH, batch_mark, batch_marked_by

pytestmark = pytest.mark.unit

TP = TopicPartition("t", 0)
MIRROR_PID, APP_PID = 41, 7
READ_UNCOMMITTED = 0


def _batch(base: int, pid: int, values: Sequence[bytes], first_headers: list) -> bytes:  # type: ignore[type-arg]
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=0, producer_id=pid, producer_epoch=0,
        base_sequence=base, batch_size=1 << 20,
    )  # fmt: skip
    for i, v in enumerate(values):
        b.append(i, timestamp=1000 + i, key=None, value=v, headers=first_headers if i == 0 else [])
    out = b.build()
    out[0:8] = struct.pack(">q", base)  # the broker sets the base offset
    return bytes(out)


def _read(blob: bytes, skipper: switch.LeanRecords | None, at: int = 0) -> PartitionRecords:
    fetched.install()
    from aiokafka.consumer import fetcher  # the name install() replaced

    return fetcher.PartitionRecords(
        TP, MemoryRecords(blob), [], at, skipper, None, True, READ_UNCOMMITTED
    )


MARK = [batch_mark("SF", MIRROR_PID)]
BLOB = b"".join(
    [
        _batch(0, APP_PID, [b"a0", b"a1"], []),
        _batch(2, MIRROR_PID, [b"m2", b"m3", b"m4"], MARK),
        _batch(5, APP_PID, [b"a5"], [("app", b"x")]),
        _batch(6, MIRROR_PID, [b"m6", b"m7"], MARK),  # last: the position must still move
    ]
)


def test_mirror_written_batches_are_skipped_and_the_position_moves_past_them() -> None:
    skipper = switch.BatchSkipper("SF")
    records = _read(BLOB, skipper)
    got = [(r.offset, r.value) for r in records]
    assert got == [(0, b"a0"), (1, b"a1"), (5, b"a5")]
    assert records.next_fetch_offset == 8
    assert skipper.take() == {TP: 5}
    assert skipper.take() == {}


def test_a_consumer_without_a_skipper_reads_every_record() -> None:
    assert [r.value for r in _read(BLOB, None)] == [b"a0", b"a1", b"m2", b"m3", b"m4", b"a5",
                                                    b"m6", b"m7"]  # fmt: skip


def test_the_first_record_of_a_batch_read_whole_keeps_its_headers() -> None:
    records = list(_read(BLOB, switch.BatchSkipper("SF")))
    assert list(records[2].headers) == [("app", b"x")]


def test_lean_records_hold_what_a_consumer_record_holds_for_the_flow() -> None:
    """A flow's consumer gets aiokafka's decoded records, not ConsumerRecords: the same
    offset, timestamp, key, value and headers, and every record (no batch is skipped)."""
    lean = list(_read(BLOB, switch.LeanRecords()))
    full = list(_read(BLOB, None))
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in lean] == [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in full
    ]
    assert len(lean) == 8


def test_a_copied_mark_is_not_believed() -> None:
    # An application re-produced a mirrored record with its headers (mark and all): its batch
    # has the application's producer id, so every record of it is read.
    copied = _batch(0, APP_PID, [b"c0", b"c1"], MARK)
    # A mark written into another DC names that DC, not the one read here.
    elsewhere = _batch(2, MIRROR_PID, [b"n2"], [batch_mark("NYC", MIRROR_PID)])
    skipper = switch.BatchSkipper("SF")
    assert [r.value for r in _read(copied + elsewhere, skipper)] == [b"c0", b"c1", b"n2"]
    assert skipper.take() == {}


def test_a_fetch_from_inside_a_skipped_batch_counts_only_what_follows() -> None:
    skipper = switch.BatchSkipper("SF")
    records = _read(BLOB, skipper, at=3)
    assert [r.offset for r in records] == [5]
    assert skipper.take() == {TP: 2 + 2}  # 3..4, then 6..7


@pytest.mark.parametrize(
    ("value", "dc", "pid", "believed"),
    [
        (b"SF/41", "SF", 41, True),
        (b"SF/41", "SF", 42, False),
        (b"SF/41", "NYC", 41, False),
        (b"SF/41", "SF", None, False),
        (b"SF/-1", "SF", -1, False),
        (None, "SF", 41, False),
        (b"SF/041", "SF", 41, False),
    ],
)
def test_batch_mark_names_the_dc_and_the_batch_producer(
    value: bytes | None, dc: str, pid: int | None, believed: bool
) -> None:
    assert batch_marked_by(value, dc, pid) is believed
    assert batch_mark("SF", 41) == (BATCH, b"SF/41")


def test_a_batch_emptied_by_compaction_is_stepped_over() -> None:
    empty = _batch(2, APP_PID, [], [])  # compaction can leave a batch with no records
    blob = _batch(0, APP_PID, [b"a0", b"a1"], []) + empty + _batch(3, APP_PID, [b"a3"], [])
    skipper = switch.BatchSkipper("SF")
    assert [r.value for r in _read(blob, skipper)] == [b"a0", b"a1", b"a3"]
    assert skipper.take() == {}


def test_a_flow_consumer_believes_provenance_only_in_mirror_batches() -> None:
    """A consumer told its source DC records where the mirror's batches are (issue 29, item 3):
    the marked ones, and one whose first record compaction removed; never an application's,
    nor one whose copied mark names another producer."""
    compacted_first_gone = _without_first_record(_batch(9, MIRROR_PID, [b"m9", b"m10"], MARK))
    blob = BLOB + _batch(8, APP_PID, [b"c8"], MARK) + compacted_first_gone
    lean = switch.LeanRecords("SF")
    got = [r.offset for r in _read(blob, lean)]
    assert got == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]
    believed = lean.believed
    assert believed is not None
    assert [o for o in range(12) if believed.covers(TP, o)] == [2, 3, 4, 6, 7, 9, 10]
    believed.release(TP, 5)
    assert [o for o in range(12) if believed.covers(TP, o)] == [6, 7, 9, 10]


def _without_first_record(batch: bytes) -> bytes:
    """The batch as compaction leaves it when its first record goes: same base offset and
    last offset delta, the first record's bytes gone (record count one less, CRC anew)."""
    from aiokafka.record.default_records import DefaultRecordBatch

    from aa.kafka.records import decode_batch

    records = decode_batch(batch)[1:]
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=0, producer_id=MIRROR_PID,
        producer_epoch=0, base_sequence=0, batch_size=1 << 20,
    )  # fmt: skip
    base = DefaultRecordBatch(batch).base_offset
    for r in records:
        b.append(r.offset - base, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
    out = b.build()
    out[0:8] = struct.pack(">q", base)
    return bytes(out)
