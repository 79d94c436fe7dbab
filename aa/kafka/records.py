"""Record batches (magic 2) decoded by aa itself, for the bytes aiokafka cannot decode.

Header names are bytes on the wire. aiokafka decodes them as UTF-8 and raises on any other
bytes, which librdkafka and Go clients write as they are given; its builders take ``str`` names
only. aa decodes such a batch with :func:`decode_batch`: a name that is not UTF-8 becomes a
:class:`RawName`, a ``str`` that remembers its bytes and encodes back to exactly them, so the
record is copied byte for byte (:mod:`aa.mirror.route` appends it through the pure-Python batch
builder, which encodes names with ``str.encode``). Everything else about the record is as
aiokafka would give it: offset, timestamp, key, value and headers.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from aiokafka import codec
from aiokafka.record import default_records
from aiokafka.structs import TopicPartition

from aa.protocols import FetchedRecord

BATCH_HEADER = 61
"""Bytes of a record batch before its first record (base offset through record count)."""
_HEAD = struct.Struct(">qiibIhiqqqhii")
_CODECS: dict[int, Callable[[bytes], bytes]] = {
    1: codec.gzip_decode,
    2: codec.snappy_decode,
    3: codec.lz4_decode,
    4: codec.zstd_decode,
}


def lz4_fast(data: bytes) -> bytes:
    """An lz4 frame as Kafka's Java producer writes one at its default level: LZ4's fast
    compressor (level 0 here; aiokafka's default, level 9, is LZ4 HC, ~8 times the CPU)."""
    return bytes(codec.lz4_encode(data, level=0))


def gzip_default(data: bytes) -> bytes:
    """gzip at zlib's default level 6, as Java's ``GZIPOutputStream`` (aiokafka's: 9)."""
    return bytes(codec.gzip_encode(data, compresslevel=6))


_ENCODERS: dict[int, Callable[[bytes], bytes]] = {
    1: gzip_default,
    2: codec.snappy_encode,
    3: lz4_fast,
    4: codec.zstd_encode,
}
_LOG_APPEND_TIME = 0x08
CODECS: dict[str, int] = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
"""Kafka's compression codecs by name, as a record batch's attributes (bits 0-2) carry them."""


def decompressed(data: Any) -> bytes | None:
    """The records of one whole record batch (bytes-like, magic 2) decompressed once with its
    codec (aiokafka's decoders, as its own batches decompress); ``None`` when uncompressed."""
    codec_id = data[22] & 0x07  # attributes (bytes 21-22), codec bits 0-2
    if not codec_id:
        return None
    decode = _CODECS.get(codec_id)
    if decode is None:
        raise BatchError(f"unknown compression codec {codec_id}")
    return decode(bytes(data[BATCH_HEADER:]))


BUILDER_MODULES = ("aiokafka.record.default_records", "aiokafka.record._crecords.default_records")
"""aiokafka's record batch builders (pure-Python and C): each calls its module's encoders."""


def use_kafka_levels() -> None:
    """Let aiokafka's batch builders (the record path's, every aa producer's) compress lz4 and
    gzip as :func:`compress` does, at the levels of Kafka's Java producer (idempotent)."""
    for name in BUILDER_MODULES:
        module = importlib.import_module(name)
        module.lz4_encode = lz4_fast  # type: ignore[attr-defined]  # module globals it calls
        module.gzip_encode = gzip_default  # type: ignore[attr-defined]


def compress(codec_id: int, records: bytes) -> bytes:
    """A batch's records compressed with ``codec_id`` as aiokafka's C batch builder compresses
    them once :func:`aa.kafka.fetched.install` gave it Kafka's levels (compressed even when
    that saves nothing)."""
    return _ENCODERS[codec_id](records)


class RawName(str):
    """A header name that is not UTF-8: its text (the bytes that are not UTF-8 escaped as lone
    surrogates, as ``surrogateescape`` does), and :attr:`raw`, the bytes on the wire, which
    :meth:`encode` returns whatever the codec asked for."""

    raw: bytes

    def __new__(cls, raw: bytes) -> RawName:
        name = super().__new__(cls, raw.decode("utf-8", "surrogateescape"))
        name.raw = raw
        return name

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return self.raw

    def printable(self) -> str:
        """The name with its odd bytes as ``\\xNN`` escapes (for a dead letter, a log line)."""
        return self.raw.decode("utf-8", "backslashreplace")


def printable(name: str) -> str:
    """A header name as text any client takes: a :class:`RawName` escaped, others as they are."""
    return name.printable() if type(name) is RawName else name


def name_bytes(name: str) -> bytes:
    """A header name's bytes on the wire."""
    return name.raw if type(name) is RawName else name.encode()


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch aa decoded itself (the fields the mirror reads of aiokafka's)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]]


class BatchError(ValueError):
    """The bytes are not a well-formed record batch of magic 2."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise BatchError("a varint runs past the end of the record")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise BatchError("a varint longer than 10 bytes")


def _field(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise BatchError("a field runs past the end of the record")
    return buf[pos : pos + n], pos + n


def _name(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return RawName(raw)


def decode_batch(data: Any, body: bytes | None = None, limit: int | None = None) -> list[Record]:
    """Every record of one whole record batch (bytes-like, its 12-byte log prefix included),
    decompressed if need be (``body``: its records decompressed already, :func:`decompressed`);
    control batches included as they are (their key and value). ``limit``: the first records
    only."""
    buf = bytes(data) if body is None else bytes(data[:BATCH_HEADER])
    if len(buf) < BATCH_HEADER:
        raise BatchError(f"{len(buf)} bytes: shorter than a record batch header")
    (base, length, _, magic, _, attrs, _, first_ts, max_ts, _, _, _, count) = _HEAD.unpack_from(buf)
    if magic != 2:
        raise BatchError(f"magic {magic}: only record batches of magic 2 are decoded here")
    if (body is None and 12 + length != len(buf)) or count < 0:
        raise BatchError("the batch length or record count does not match its bytes")
    if body is None:
        body = decompressed(buf) or buf[BATCH_HEADER:]
    log_append = bool(attrs & _LOG_APPEND_TIME)
    out: list[Record] = []
    pos = 0
    for _ in range(count if limit is None else min(count, limit)):
        size, pos = _varint(body, pos)
        end = pos + size
        if size < 1 or end > len(body):
            raise BatchError("a record runs past the end of the batch")
        rec = body[:end]
        at = pos + 1  # attributes: unused
        ts_delta, at = _varint(rec, at)
        offset_delta, at = _varint(rec, at)
        key, at = _field(rec, at)
        value, at = _field(rec, at)
        n, at = _varint(rec, at)
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(n):
            name, at = _field(rec, at)
            if name is None:
                raise BatchError("a header without a name")
            hvalue, at = _field(rec, at)
            headers.append((_name(name), hvalue))
        if at != end:
            raise BatchError("a record's fields do not fill its length")
        ts = max_ts if log_append else first_ts + ts_delta
        out.append(Record(base + offset_delta, ts, key, value, headers))
        pos = end
    return out


def _size(n: int) -> int:
    """Bytes of ``n`` as a zigzag varint."""
    u = (n << 1) ^ (n >> 63)
    size = 1
    while u >= 0x80:
        u >>= 7
        size += 1
    return size


def record_bytes(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]
) -> int:
    """Bytes one record takes in a batch as its first (offset and timestamp deltas 0), its
    length prefix included: what the target's ``max.message.bytes`` is checked against, with
    :data:`BATCH_HEADER`."""
    body = 3 + _size(len(headers))  # attributes, timestamp delta 0, offset delta 0
    body += _size(-1) if key is None else _size(len(key)) + len(key)
    body += _size(-1) if value is None else _size(len(value)) + len(value)
    for name, hvalue in headers:
        raw = name_bytes(name)
        body += _size(len(raw)) + len(raw)
        body += _size(-1) if hvalue is None else _size(len(hvalue)) + len(hvalue)
    return body + _size(body)


def batch_records(data: bytes) -> list[FetchedRecord]:
    """A whole record batch's records as the flow's consumer gets them: decoded by aiokafka
    (its own record objects), or by :func:`decode_batch` where aiokafka cannot (a header name
    that is not UTF-8)."""
    try:
        return list(default_records.DefaultRecordBatch(data))
    except UnicodeDecodeError:
        return list(decode_batch(data))


class RawBatch:
    """A fetched source batch, not decoded: ``offset`` is its first offset (at or after the
    fetch position), ``next_offset`` the one after its last, ``timestamp`` its max timestamp."""

    __slots__ = ("_body", "count", "data", "next_offset", "offset", "timestamp")

    def __init__(self, data: Any, offset: int, next_offset: int, timestamp: int) -> None:
        self.data = data
        self.offset = offset
        self.next_offset = next_offset
        self.count = next_offset - offset
        self.timestamp = timestamp
        self._body: bytes | None = None

    def body(self) -> bytes | None:
        """A compressed batch's records decompressed (once, kept until :meth:`release`);
        ``None`` when the batch is uncompressed (its records follow its header in ``data``)."""
        if self._body is None:
            self._body = decompressed(self.data)
        return self._body

    def release(self) -> None:
        """Drop the decompressed records (re-encoded: only the fetched bytes stay held)."""
        self._body = None

    def detach(self) -> None:
        """Hold a copy of its own bytes instead of a view of its partition's fetched bytes,
        whose other batches the flow skipped (:meth:`aa.mirror.fetch.Fetcher.next_batch`)."""
        if isinstance(self.data, memoryview):
            self.data = bytes(self.data)

    def held_bytes(self) -> int:
        """Its size as fetched, or decompressed where it was."""
        return len(self.data) if self._body is None else len(self._body)

    def records(self) -> list[FetchedRecord]:
        """Its records, decoded by aiokafka as the flow's consumer would (the record path), or
        by aa where aiokafka cannot (a header name that is not UTF-8)."""
        return [r for r in batch_records(bytes(self.data)) if r.offset >= self.offset]


Fetched = FetchedRecord | RawBatch
"""One item of a fetched partition's list as the flow's consumer hands it out: a decoded
record (aiokafka's, or aa's :class:`Record`), or a whole source batch undecoded (only for a
consumer whose switch has ``raw`` set, :mod:`aa.kafka.fetched`)."""


def decoded(records: Sequence[Fetched]) -> TypeGuard[Sequence[FetchedRecord]]:
    """Whether a fetched partition's list holds no :class:`RawBatch` (a pass over it)."""
    return not any(type(r) is RawBatch for r in records)


@dataclass(frozen=True, slots=True)
class CorruptBatch:
    """Handed out in place of a fetched batch that fails its CRC check (a damaged source log),
    as the last item of its partition's list: the partition's fetch ends there, and the
    consumer's position is one past :attr:`offset` until the flow seeks it back (see
    :meth:`aa.mirror.fetch.Fetcher.next_batch`). aiokafka would raise instead, losing the
    records fetched before it, and raise again on every fetch after a restart."""

    offset: int
    """The first offset of the damaged batch that this fetch asked for."""


Polled = Fetched | CorruptBatch
"""One item of a fetched partition's list as ``getmany`` returns it: a :class:`CorruptBatch`
only last (:meth:`aa.mirror.fetch.Fetcher.next_batch` takes it out)."""


def take_corrupt(
    polled: dict[TopicPartition, list[Polled]],
) -> tuple[dict[TopicPartition, Sequence[Fetched]], dict[TopicPartition, int]]:
    """``getmany``'s result with every :class:`CorruptBatch` taken out (a partition left with
    nothing dropped), and per partition where its damaged batch starts."""
    corrupt: dict[TopicPartition, int] = {}
    for tp, records in list(polled.items()):
        last = records[-1]
        if type(last) is CorruptBatch:
            records.pop()
            if not records:
                del polled[tp]
            corrupt[tp] = last.offset
    # the lists hold no CorruptBatch now (one is only ever last)
    return cast("dict[TopicPartition, Sequence[Fetched]]", polled), corrupt


def batch_builder(producer_id: int, base_sequence: int, codec: int = 0) -> Any:
    """An empty record batch (magic 2, not transactional, no size limit), aiokafka's builder:
    ``append(offset_delta, timestamp=, key=, value=, headers=)`` then ``build()``; for
    batches written offline (the benchmarks)."""
    return default_records.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=producer_id,
        producer_epoch=0, base_sequence=base_sequence, batch_size=1 << 30,
    )  # fmt: skip
