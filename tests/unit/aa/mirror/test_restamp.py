"""The batch path of :mod:`aa.mirror.restamp` writes, byte for byte, the target batches the
record path writes: the same fetched bytes go through the flow's own consumer decoding and
``Forwarder`` once with the batch path and once without, and every built target batch, the
held source offsets, the commit offsets and the counts are compared. Pure logic: no broker."""

from __future__ import annotations

import asyncio
import functools
import struct
from typing import Any
from unittest import mock

import pytest
from aiokafka.consumer import fetcher
from aiokafka.errors import CorruptRecordException
from aiokafka.producer.message_accumulator import BatchBuilder
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.util import calc_crc32c
from aiokafka.structs import TopicPartition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aa.config import read_yaml
from aa.kafka import fetched, switch
from aa.kafka import records as kafka_records
from aa.kafka.builders import RawBuilder
from aa.mirror import restamp
from aa.mirror.limits import TargetLimits
from aa.mirror.route import Forwarder
from aa.mirror.settings import FlowSettings
from aa.policy import FlowRouter
from aa.provenance import batch_mark
from tests.helpers.mirror import stage_context

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not restamp.available(), reason="the compiled helper is not built"),
]

TOPOLOGY = """
datacenters:
  SF: {bootstrap: "127.0.0.1:1"}
  NYC: {bootstrap: "127.0.0.1:2"}
flows: full-mesh
topics: ["t"]
"""
TP = TopicPartition("t", 3)
Rec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
"""(timestamp, key, value, headers) of one source record."""


def source_batch(base: int, records: list[Rec], *, compression: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, compression, 0, 7, 0, base % 2**31, 1 << 30)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    raw = builder.build()
    raw[0:8] = struct.pack(">q", base)  # the base offset, as the broker sets it
    return bytes(raw)


class _Placement:
    def __init__(self, limits: TargetLimits | None) -> None:
        self.limits = {"t": limits} if limits is not None else {}

    async def target_topic(self, topic: str) -> str:
        return topic

    def refuses(self, target: str) -> bool:
        return False

    async def place(self, tp: TopicPartition, target: str) -> tuple[int, bool]:
        return 8, True


class _Target:
    """Keeps what is submitted; every send is acknowledged at once."""

    def __init__(self, batch_size: int, mark: bool, codec: int | None) -> None:
        self.batch_size = batch_size
        self.fixed = codec
        self.codecs: dict[TopicPartition, int] = {}
        self.marks = [[batch_mark("NYC", 99)] if mark else []]
        self.sent: list[tuple[Any, str, int]] = []
        self.dead: list[tuple[int, str]] = []

    def codec(self, source: TopicPartition) -> int:
        """``compression: source`` (the default) unless a codec is fixed, as Target.codec."""
        return self.codecs.get(source, 0) if self.fixed is None else self.fixed

    def new_batch(self, limits: Any, codec: int) -> BatchBuilder:
        return BatchBuilder(self.batch_size, codec)

    def new_raw_batch(self, limits: Any, codec: int) -> BatchBuilder:
        return RawBuilder(self.batch_size, codec, is_transactional=False)

    def lane(self, topic: str, partition: int, wide: bool) -> int:
        return 0

    async def submit(
        self, builder: Any, topic: str, partition: int, lane: int = 0
    ) -> asyncio.Future[Any]:
        self.sent.append((builder, topic, partition))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def dead_letter(self, record: Any, tp: Any, reason: str, **kw: Any) -> Any:
        self.dead.append((record.offset, reason))
        return await self.submit(None, "dead", 0)


@functools.cache
def _router() -> FlowRouter:
    topology = read_yaml(TOPOLOGY)
    flow = next(f for f in topology.flows if (f.source, f.target) == ("SF", "NYC"))
    return FlowRouter(topology, flow)


def copy(
    blob: bytes,
    *,
    raw: bool,
    fetch_offset: int,
    batch_size: int,
    mark: bool,
    limits: Any,
    on_error: str = "fail",
    codec: int | None = None,
) -> dict[str, Any]:
    """One fetched partition through the flow's consumer decoding and Forwarder."""
    fetched.install()
    lean = switch.LeanRecords()
    lean.raw = raw
    fetch = fetcher.PartitionRecords(
        TP, fetcher.MemoryRecords(blob), [], fetch_offset, lean, None, True, 0
    )
    records = list(fetch)
    raw_batches = sum(type(r) is restamp.RawBatch for r in records)
    target = _Target(batch_size, mark, codec)
    target.codecs = lean.codecs
    s = FlowSettings("SF", "NYC", {}, {}, "g", on_error=on_error)
    ctx = stage_context(s, _router())
    forwarder = Forwarder(ctx, _Placement(limits), target, lambda tp, offset: None)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    built = []
    # the clock fixed while building too: gzip writes the time into its header
    with mock.patch("aa.mirror.route.time.time", return_value=1_795_474_068.385):
        try:
            pending = loop.run_until_complete(forwarder.forward({TP: records}))
        finally:
            loop.close()
        for builder, topic, partition in target.sent:
            if builder is None:
                continue  # a dead letter
            builder._set_producer_state(5, 1, 100)
            built.append((topic, partition, builder.record_count(), bytes(builder._build())))
    return {
        "built": built,
        "held": [[r.offset for r in held] for _, held, _, _ in pending.sends],
        "ends": [(held[0].offset, held[-1].offset, len(held)) for _, held, _, _ in pending.sends],
        "offsets": pending.offsets,
        "copied": {tp.topic: n for tp, n in pending.copied.items()},
        "bytes": dict(pending.bytes),
        "fetch_position": fetch.next_fetch_offset,
        "dead": target.dead,
        "stopped": repr(pending.malformed) + repr([f.reason for f in pending.failed.values()]),
        "raw_batches": raw_batches,
    }


def same_both_ways(
    blob: bytes, fetch_offset: int = 0, on_error: str = "fail", **kw: Any
) -> dict[str, Any]:
    kw = {"batch_size": 512 * 1024, "mark": True, "limits": None, "on_error": on_error, **kw}
    fast = copy(blob, raw=True, fetch_offset=fetch_offset, **kw)
    slow = copy(blob, raw=False, fetch_offset=fetch_offset, **kw)
    assert slow.pop("raw_batches") == 0
    raw_batches = fast.pop("raw_batches")
    assert fast == slow
    return {**fast, "raw_batches": raw_batches}


TS = 1_700_000_000_000
EDGES: list[Rec] = [
    (TS, None, b"v", []),  # null key
    (TS + 1, b"", b"", []),  # empty key and value
    (TS - 5_000, b"k", None, []),  # null value, timestamp before the batch's first
    (TS + 10**9, b"k" * 300, b"v" * 20_000, []),  # two- and three-byte length varints
    (TS, b"k", b"v", [("h", b"")]),  # an empty header value
    (TS, b"k", b"v", [("h", None), ("", b"x")]),  # a null header value, an empty header key
    (TS, b"k", b"v", [("trace-id", b"t" * 200)] * 3),
    (-1, b"k", b"v", []),  # no timestamp
]


def test_local_batches_are_written_byte_for_byte_as_the_record_path_writes_them() -> None:
    blob = source_batch(0, EDGES) + source_batch(len(EDGES), EDGES[::-1])
    out = same_both_ways(blob)
    assert out["raw_batches"] == 2
    assert out["copied"] == {"t": 2 * len(EDGES)}
    assert len(out["built"]) == 1


def test_large_offsets_and_a_batch_split_across_target_batches_match() -> None:
    base = 2**40 + 17  # many aa-src digits
    many = [(TS + i, b"k%d" % i, b"v" * 700, [("h", b"x")]) for i in range(40)]
    out = same_both_ways(source_batch(base, many), fetch_offset=base, batch_size=4096)
    assert len(out["built"]) > 3  # split mid-batch, more than once
    assert out["ends"][0][0] == base
    assert out["ends"][-1][1] == base + 39
    assert out["offsets"] == {TP: base + 40}


def test_without_a_batch_mark_the_batch_path_matches_too() -> None:
    same_both_ways(source_batch(0, EDGES), mark=False, batch_size=2048)


def test_batches_the_batch_path_refuses_go_the_record_path_in_order() -> None:
    aa_headers = [(TS, b"k", b"v", [("aa-origin", b"SF")])]  # foreign provenance
    non_ascii = [(TS, b"k", b"v", [("clé", b"x")])]
    blob = b"".join(
        [
            source_batch(0, EDGES[:3]),
            source_batch(3, aa_headers),
            source_batch(4, EDGES[3:5]),
            source_batch(6, non_ascii),
            source_batch(7, EDGES[5:]),
        ]
    )
    out = same_both_ways(blob)
    assert out["held"] == [list(range(10))]


def test_records_outside_the_target_limits_take_the_record_path() -> None:
    limits = TargetLimits.from_configs(
        "t", {"max.message.bytes": "1000", "cleanup.policy": "compact"}
    )
    # too large for the target, and a null key on a compacted topic: dead-lettered by the
    # record path (both ways), the batch around them copied
    odd = [(TS, b"k", b"v" * 2000, []), (TS, None, b"v", []), (TS, b"k", b"ok", [])]
    out = same_both_ways(source_batch(0, odd), limits=limits, on_error="dead-letter")
    assert [offset for offset, _ in out["dead"]] == [0, 1]
    assert out["copied"] == {"t": 1}
    out = same_both_ways(source_batch(0, odd), limits=limits)
    assert "too large at t/3@0" in out["stopped"]
    fine = [(TS, b"k", b"ok", [])] * 5
    out = same_both_ways(source_batch(0, fine), limits=limits)
    assert out["copied"] == {"t": 5}


def test_a_fetch_position_inside_a_batch_decodes_that_batch() -> None:
    blob = source_batch(10, EDGES) + source_batch(18, EDGES)
    out = same_both_ways(blob, fetch_offset=13)
    assert out["held"][0][0] == 13
    assert out["fetch_position"] == 26


CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("name", CODECS)
def test_compressed_batches_take_the_batch_path_and_keep_their_codec(name: str) -> None:
    """Decompressed once, re-encoded, compressed once in the source's codec (compression:
    source), byte for byte as the record path writes them, split across target batches too."""
    codec = CODECS[name]
    blob = source_batch(0, EDGES, compression=codec) + source_batch(8, EDGES, compression=codec)
    out = same_both_ways(blob, batch_size=16 * 1024)
    assert out["raw_batches"] == 2
    assert out["copied"] == {"t": 2 * len(EDGES)}
    assert len(out["built"]) > 1
    for _, _, _, built in out["built"]:
        assert built[22] & 0x07 == codec  # every target batch in the source's codec
    uncompressed = same_both_ways(blob, batch_size=16 * 1024, codec=0)
    assert uncompressed["raw_batches"] == 2
    assert {b[3][22] & 0x07 for b in uncompressed["built"]} == {0}


_header = st.tuples(
    # "aa-x" and "é" send their batch down the record path, in between batch-path ones
    st.one_of(st.text(st.characters(codec="ascii"), max_size=12), st.sampled_from(["aa-x", "é"])),
    st.one_of(st.none(), st.binary(max_size=40)),
)
_record = st.tuples(
    st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**45)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=3000)),
    st.lists(_header, max_size=4),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches_=st.lists(st.lists(_record, min_size=1, max_size=12), min_size=1, max_size=4),
    base=st.integers(min_value=0, max_value=2**50),
    batch_size=st.sampled_from([1024, 8192, 512 * 1024]),
    source_codecs=st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=4, max_size=4),
    target_codec=st.sampled_from([None, 0, 1, 2, 3, 4]),
)
def test_generated_batches_match_byte_for_byte(
    batches_: list[list[Rec]],
    base: int,
    batch_size: int,
    source_codecs: list[int],
    target_codec: int | None,
) -> None:
    """Every codec (none, gzip, snappy, lz4, zstd) on either side: ``None`` keeps the
    source's."""
    blob, at = b"", base
    for records, codec in zip(batches_, source_codecs, strict=False):
        blob += source_batch(at, records, compression=codec)
        at += len(records)
    same_both_ways(blob, fetch_offset=base, batch_size=batch_size, codec=target_codec)


def test_aa_pure_python_switches_the_batch_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert restamp.enabled()
    monkeypatch.setenv(restamp.PURE_PYTHON_ENV, "1")
    assert not restamp.enabled()


@pytest.mark.parametrize("raw", [True, False])
def test_a_corrupt_batch_is_refused_on_both_paths(raw: bool) -> None:
    """The flow's consumer hands out a CorruptBatch where the damage starts (the fetch stage
    decides what happens, see aa.mirror.fetch), after the intact batch before it, and nothing
    after it; other consumers still get aiokafka's CorruptRecordException."""
    intact = source_batch(0, EDGES)
    blob = bytearray(intact + source_batch(len(EDGES), EDGES) + source_batch(2 * len(EDGES), EDGES))
    blob[len(intact) * 2 - 1] ^= 0xFF  # the second batch's last value byte: its CRC fails
    fetched.install()
    lean = switch.LeanRecords()
    lean.raw = raw
    partition = fetcher.PartitionRecords(
        TP, fetcher.MemoryRecords(bytes(blob)), [], 0, lean, None, True, 0
    )
    got = list(partition)
    assert got[-1] == kafka_records.CorruptBatch(len(EDGES))
    decoded = [r for item in got[:-1] for r in (item.records() if raw else [item])]
    assert [r.offset for r in decoded] == list(range(len(EDGES)))
    plain = fetcher.PartitionRecords(
        TP, fetcher.MemoryRecords(bytes(blob)), [], 0, None, None, True, 0
    )
    with pytest.raises(CorruptRecordException):
        list(plain)


def test_kafka_3_9_default_timestamp_limits_do_not_overflow_the_batch_path() -> None:
    """Kafka 3.9's topics default message.timestamp.{before,after}.max.ms to Long.MAX_VALUE:
    now +/- that is outside 64 bits, and every headers-mode flow on 3.9 failed with
    OverflowError('int too big to convert') in the helper, restarting forever (seen in CI's
    Kafka 3.9 run; 4.x defaults after.max.ms to one hour)."""
    long_max = str(2**63 - 1)
    limits = TargetLimits.from_configs(
        "t",
        {"message.timestamp.before.max.ms": long_max, "message.timestamp.after.max.ms": long_max},
    )
    out = same_both_ways(source_batch(0, EDGES), limits=limits)
    assert out["raw_batches"] == 1
    assert out["copied"] == {"t": len(EDGES)}


def test_exactly_once_admits_a_raw_batch_from_its_next_offset() -> None:
    """Exactly-once drops what it copied already (``ExactlyOnce.admit``): a raw batch wholly
    before the next offset is dropped, one across it decoded from there, later ones kept."""
    first, second = source_batch(0, EDGES), source_batch(8, EDGES)
    raws = [restamp.RawBatch(memoryview(b), at, at + 8, TS) for b, at in ((first, 0), (second, 8))]
    assert restamp.from_offset(raws, 0) == raws
    assert restamp.from_offset(raws, 8) == raws[1:]
    across = restamp.from_offset(raws, 11)
    assert [r.offset for r in across] == list(range(11, 16))
    assert restamp.next_offset(across) == 16
    assert restamp.from_offset(raws, 16) == []


def _log_append_time(batch: bytes) -> bytes:
    """``batch`` as a broker with ``message.timestamp.type=LogAppendTime`` holds it (the
    attributes' timestamp-type bit set, the CRC computed again): the batch path leaves it to the
    record path."""
    out = bytearray(batch)
    attributes = struct.unpack_from(">h", out, 21)[0] | 0x08
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, calc_crc32c(bytes(out[21:])))
    return bytes(out)


def test_raw_batches_between_two_decoded_ends_are_copied_too() -> None:
    """A fetch that starts inside a batch (decoded from the position) and ends with a batch the
    batch path leaves to the record path holds raw batches between two decoded records: the
    route stage chose its path by the list's ends only, and handed the raw batches to the
    record path as if they were records."""
    blob = (
        source_batch(10, EDGES)
        + source_batch(18, EDGES)
        + _log_append_time(source_batch(26, EDGES))
    )
    out = same_both_ways(blob, fetch_offset=13)
    assert out["raw_batches"] == 1
    assert out["copied"] == {"t": 5 + 2 * len(EDGES)}
    assert out["offsets"] == {TP: 34}
