"""Local record batches re-encoded whole: the W1 hot path without a Python object per record.

A flow copying records that applications wrote in its source DC (no ``aa-*`` headers) adds the
same provenance to each: its headers, then ``aa-origin``, ``aa-path``, ``aa-src`` (a prefix plus
the offset), ``aa-ts`` and, on a target batch's first record, ``aa-batch``. Decoding such a
record into a Python object, routing it and appending it to a batch builder costs a few
microseconds; the compiled helper ``aa.mirror._restamp`` instead walks the source batch's bytes
and appends every record, re-encoded with those headers, to the target batch in one call.

The flow's consumer hands out a :class:`RawBatch` (the batch undecoded) for a fetched batch that
is not a control batch, CreateTime, magic 2, CRC checked and wholly at or after the fetch
position (:mod:`aa.kafka.fetched`), compressed or not, transactional or not (a read_committed
consumer drops aborted batches before they get here). A compressed batch is decompressed once
(:meth:`RawBatch.body`), its records re-encoded from there; the target batch is compressed once,
with the target's codec, when it is built.
The helper takes it only when every record is well formed, has contiguous offsets, no header
key starting with ``aa-`` or outside ASCII, and is inside the target's limits; otherwise it
writes nothing and the batch is decoded by aiokafka and routed record by record as before
(:meth:`RawBatch.records`). Same-partition copies only: a re-partitioned target decodes too.

The output is byte for byte what the record path writes (``tests/unit/aa/mirror/test_restamp.py``
compares them): the target batch is aiokafka's pure-Python record batch builder
(:class:`aa.kafka.builders.RawBuilder`), whose buffer the helper appends to and whose header,
CRC and compression aiokafka writes as usual.

Where the helper is not built (no C compiler at install time), or ``AA_PURE_PYTHON=1`` is set
in the environment, the flow takes the record path only; ``flow_started`` logs which
(``batch_restamp``). Exactly-once flows take the batch path too: their target batches are the
transactional producer's, built by the same helper.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from aa.kafka.builders import AVAILABLE, RawBuilder
from aa.kafka.records import Fetched, RawBatch, decoded
from aa.protocols import FetchedRecord
from aa.provenance import MIRRORED_AT, SRC, LocalStamp

try:
    from aa.mirror import _restamp as _helper
except ImportError:  # not built: the record path only (see the module doc)
    _helper = None  # type: ignore[assignment]  # the module's absence is the fallback

if TYPE_CHECKING:
    from aa.kafka.records import Polled


PURE_PYTHON_ENV = "AA_PURE_PYTHON"

Screen = tuple[int, bool, int, int] | None
"""The target's limits as the helper checks them (:meth:`aa.mirror.limits.TargetLimits.screen`)."""


def available() -> bool:
    """Whether the compiled helper and the aiokafka parts it relies on are here."""
    return _helper is not None and AVAILABLE


def enabled() -> bool:
    """Whether flows should take the batch path: :func:`available`, and not switched off by
    ``AA_PURE_PYTHON=1`` (read when a flow starts)."""
    return available() and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")


def next_offset(records: Sequence[Polled]) -> int:
    """The offset after a fetched list (records, :class:`RawBatch`\\ es, a last
    :class:`~aa.kafka.records.CorruptBatch`)."""
    last = records[-1]
    return last.next_offset if isinstance(last, RawBatch) else last.offset + 1


def from_offset(records: Sequence[Fetched], offset: int) -> list[Fetched]:
    """A fetched list from ``offset`` on: a :class:`RawBatch` wholly before it dropped, one
    across it decoded (its records from there)."""
    out: list[Fetched] = []
    for r in records:
        if r.offset >= offset:
            out.append(r)
        elif isinstance(r, RawBatch) and r.next_offset > offset:
            out.extend(x for x in r.records() if x.offset >= offset)
    return out


def record_count(records: Sequence[Fetched]) -> int:
    return sum(r.count if isinstance(r, RawBatch) else 1 for r in records)


def fetched_bytes(records: Sequence[Fetched]) -> int:
    """A fetched list's bytes: a :class:`RawBatch` by its size as fetched, or decompressed
    where it was (at least its records' key and value bytes), a decoded record by its key and
    value bytes."""
    n = 0
    for r in records:
        if isinstance(r, RawBatch):
            n += r.held_bytes()
        else:
            key, value = r.key, r.value
            n += (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
    return n


def expand(records: Sequence[Fetched]) -> Sequence[FetchedRecord]:
    """A fetched list with every :class:`RawBatch` decoded (for the record path)."""
    if decoded(records):
        return records
    out: list[FetchedRecord] = []
    for r in records:
        if isinstance(r, RawBatch):
            out.extend(r.records())
        else:
            out.append(r)
    return out


class Held(Sequence[Any]):
    """The source records of a target batch filled by the batch path: spans of raw batches
    (and the odd decoded record), read back as records only where the settle stage needs them
    (a refused batch); offset syncs read the first and last."""

    __slots__ = ("_n", "_spans")

    def __init__(self) -> None:
        self._spans: list[tuple[Fetched, int, int]] = []
        self._n = 0

    def append(self, record: FetchedRecord) -> None:
        self._spans.append((record, 0, 1))
        self._n += 1

    def add(self, raw: RawBatch, lo: int, hi: int) -> None:
        self._spans.append((raw, lo, hi))
        self._n += hi - lo

    def __len__(self) -> int:
        return self._n

    def spans(self) -> Iterator[tuple[int, int]]:
        """``(first offset, count)`` per span (:class:`aa.offsets.sync.Spans`: offset syncs
        read these, not the records)."""
        for item, lo, hi in self._spans:
            yield (item.offset + lo, hi - lo) if isinstance(item, RawBatch) else (item.offset, 1)

    def __iter__(self) -> Iterator[FetchedRecord]:
        for item, lo, hi in self._spans:
            if isinstance(item, RawBatch):
                yield from item.records()[lo:hi]
            else:
                yield item

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return list(self)[i]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        for item, lo, hi in self._spans:
            if i < hi - lo:
                return _At(item.offset + lo + i) if isinstance(item, RawBatch) else item
            i -= hi - lo
        raise IndexError(i)  # pragma: no cover - the count says otherwise


class _At:
    """A record of a raw span as offset syncs read it: its offset (the batch path takes only
    batches with contiguous offsets)."""

    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset


_CRC = struct.Struct(">I")


def crc_ok(batch: Any) -> bool:
    """Whether a whole record batch (bytes-like) carries the CRC-32C of its contents (the
    helper's CRC runs about ten times faster than aiokafka's here)."""
    return bool(_helper.crc32c(batch[21:]) == _CRC.unpack_from(batch, 17)[0])


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def encode_header(key: str, value: bytes) -> bytes:
    """One record header as a record batch holds it."""
    k = key.encode()
    return _varint(len(k)) + k + _varint(len(value)) + value


class Stamp:
    """The encoded provenance of one source partition's local records, for the helper."""

    __slots__ = ("pre", "prefix")

    def __init__(self, local: LocalStamp) -> None:
        origin, path, self.prefix = local.parts()
        self.pre = encode_header(*origin) + encode_header(*path) + _varint(len(SRC)) + SRC.encode()


def append(
    builder: RawBuilder,
    raw: RawBatch,
    start: int,
    n: int,
    stamp: Stamp,
    post: bytes,
    mark: bytes,
    screen: Screen,
) -> tuple[int, int] | None:
    """Append ``raw``'s records from ``start`` to ``builder`` (``n`` records in it already):
    ``(records written, their key and value bytes)``, fewer than the rest when the batch is
    full; ``None`` when the batch is not one this path takes (nothing written)."""
    buffer, first_ts, max_ts, size = builder.fill()
    got = _helper.restamp(
        raw.data, start, buffer, n, first_ts, max_ts, size, stamp.pre, stamp.prefix, post, mark,
        screen, raw.body(),
    )  # fmt: skip
    if got is None:
        return None
    written, first_ts, max_ts, nbytes = got
    if written:
        builder.filled(n, written, first_ts, max_ts)
    return written, nbytes


def encoded_stamp(now_ms: int) -> bytes:
    """The encoded ``aa-ts`` header of one forward call."""
    return encode_header(MIRRORED_AT, b"%d" % now_ms)
