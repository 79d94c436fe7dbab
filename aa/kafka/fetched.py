"""The flow consumer's hook into aiokafka: lean records, raw batches, mirror batches told apart.

In a full mesh each flow A→B forwards only the records applications wrote in A; the copies the
other flows wrote into A (two thirds of A's topic in a 3-DC mesh) are skipped. Decoding them
one by one into ``ConsumerRecord``s is most of a flow's CPU, so the mirror marks its batches
instead: the first record of each batch it writes into DC A carries ``aa-batch: A/<producer
id>`` (:func:`aa.provenance.batch_mark`). A flow reading A that never forwards mirrored records
(:meth:`aa.policy.router.FlowRouter.forwards_mirrored`) decodes that first record, and when the
mark names A and the producer id the batch itself carries, skips the batch: its records never
reach the flow, the consumer's position moves past them and the flow commits that position like
any other (``MirrorFlow._moved_positions``). A mark copied by an application that re-produces a
record is never believed: that batch has the application's producer id.

Every flow's consumer also gets its records lean (:class:`LeanRecords`): aiokafka's own record
objects as its batches decode them, with offset, timestamp, key, value and headers, instead of a
``ConsumerRecord`` built per record (11 fields, the key and value sizes, a copy of the headers
into a tuple; a third of a W1 flow's CPU per record). They carry no topic or partition: the flow
keeps the partition with each fetched list (:class:`aa.mirror.pending.Pending`).

A consumer whose switch has ``raw`` set (the flow's, when :func:`aa.mirror.restamp.enabled`)
gets each CreateTime data batch (compressed or not, transactional or not: aborted ones are
dropped first, control batches never handed out) that starts at or after its fetch position as
one :class:`~aa.kafka.records.RawBatch`, undecoded, for the batch path of
:mod:`aa.mirror.restamp`; aiokafka's position still moves record batch by record batch.

aiokafka has no hook for this: its fetcher builds a ``PartitionRecords`` per fetched partition
from the module-level name. :func:`install` replaces that name once, with a subclass that acts
only for consumers whose ``key_deserializer`` is a :class:`LeanRecords` (and then deserializes
no key); every other consumer in the process is untouched. If a later aiokafka changes these
names, :func:`install` raises and the flow refuses to start rather than decode differently.
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections.abc import Iterator
from typing import Any

from aiokafka.consumer import fetcher as _fetcher
from aiokafka.structs import TopicPartition

from aa.kafka import private
from aa.kafka.records import (
    BatchError,
    CorruptBatch,
    Polled,
    RawBatch,
    decode_batch,
    use_kafka_levels,
)
from aa.kafka.switch import BatchSkipper, LeanRecords
from aa.mirror.restamp import crc_ok

_LENGTH = struct.Struct(">i")


class _Skipped:
    """What aiokafka sees in place of a skipped batch: an empty control batch, which it steps
    over (``next_fetch_offset`` moves to its end) whatever the isolation level."""

    __slots__ = ("base_offset", "next_offset")
    producer_id = None
    is_control_batch = True
    is_transactional = False

    def __init__(self, base_offset: int, next_offset: int) -> None:
        self.base_offset, self.next_offset = base_offset, next_offset

    def validate_crc(self) -> bool:
        return True  # the real batch's CRC was checked before it was read

    def __iter__(self) -> Iterator[Any]:
        return iter(())


class _Damaged:
    """What aiokafka sees in place of a batch that fails its CRC: a batch of one item, the
    :class:`CorruptBatch`."""

    __slots__ = ("_item", "base_offset", "next_offset")
    producer_id = None
    is_control_batch = False
    is_transactional = False

    def __init__(self, at: int) -> None:
        self.base_offset, self.next_offset, self._item = at, at + 1, CorruptBatch(at)

    def validate_crc(self) -> bool:
        return True  # it failed: what aiokafka iterates is the item saying so

    def __iter__(self) -> Iterator[Any]:
        return iter((self._item,))


class _Peeked:
    """A batch whose first record was already decoded: that record, then the rest."""

    __slots__ = ("_batch", "_records")

    def __init__(self, batch: Any, first: Any, rest: Iterator[Any]) -> None:
        self._batch = batch
        # aiokafka's C batch must not be iter()-ed twice (chain would): read it by next().
        self._records = itertools.chain((first,), iter(functools.partial(next, rest, None), None))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)

    def validate_crc(self) -> bool:
        return True  # checked before the first record was read (checking again restarts it)

    def __iter__(self) -> Iterator[Any]:
        return self._records

    def __next__(self) -> Any:
        return next(self._records)


class _Raw:
    """What aiokafka sees in place of a batch handed out undecoded: a batch of one item, the
    :class:`RawBatch` (its ``offset`` is the batch's first), and the real batch's attributes."""

    __slots__ = ("_batch", "_raw")

    def __init__(self, batch: Any, raw: RawBatch) -> None:
        self._batch, self._raw = batch, raw

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)

    def validate_crc(self) -> bool:
        return True  # checked before it was handed out

    def __iter__(self) -> Iterator[Any]:
        return iter((self._raw,))


class _Decoded:
    """What aiokafka sees in place of a batch it cannot decode (a header name that is not
    UTF-8), decoded by aa (:func:`aa.kafka.records.decode_batch`), with the real batch's
    attributes."""

    __slots__ = ("_batch", "_records")

    def __init__(self, batch: Any, records: list[Any]) -> None:
        self._batch, self._records = batch, records

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)

    def validate_crc(self) -> bool:
        return True  # checked before it was decoded

    def __iter__(self) -> Iterator[Any]:
        return iter(self._records)


class _Records:
    """``MemoryRecords`` as aiokafka reads it, with mirror-written batches replaced (a
    skipper) and eligible batches handed out undecoded (``data``: the fetched bytes)."""

    def __init__(
        self,
        records: Any,
        tp: TopicPartition,
        switch: LeanRecords,
        check_crcs: bool,
        at: int,
        data: Any,
    ) -> None:
        self._records, self._tp, self._switch, self._check_crcs = records, tp, switch, check_crcs
        self._skipper = switch if isinstance(switch, BatchSkipper) else None
        self._at = at  # the fetch offset: records before it are not this fetch's
        self._data = memoryview(data) if data is not None else None
        self._raw = switch.raw and data is not None  # hand out eligible batches undecoded
        self._pos = 0  # where the next batch starts in data
        self._damaged = False  # a batch failed its CRC: this partition's fetch ends there
        self.whole: Any = None
        """The bytes of the batch :meth:`next_batch` returned last (``None``: unknown), for
        the batches aiokafka cannot decode (:func:`aa.kafka.records.decode_batch`)."""

    def has_next(self) -> bool:
        return not self._damaged and bool(self._records.has_next())

    def size_in_bytes(self) -> int:
        """The fetched bytes held (as ``MemoryRecords`` answers: memory accounting reads it)."""
        return int(self._records.size_in_bytes())

    def next_batch(self) -> Any:
        batch = self._records.next_batch()
        whole = None
        if self._data is not None and batch is not None:
            start = self._pos  # MemoryRecords frames batches the same way
            self._pos = start + 12 + _LENGTH.unpack_from(self._data, start + 8)[0]
            whole = self._data[start : self._pos]
        self.whole = whole
        if batch is None:
            return batch
        plain = not batch.is_control_batch and getattr(batch, "magic", 2) >= 2
        raw = self._raw and plain and batch.timestamp_type == 0 and batch.base_offset >= self._at
        # every batch's CRC is checked here, once (aiokafka's own check is off for lean
        # consumers: it would raise, see CorruptBatch)
        if self._check_crcs and not (crc_ok(whole) if raw else batch.validate_crc()):
            self._damaged = True
            return _Damaged(max(batch.base_offset, self._at))
        if plain:  # the codec a copy of it keeps (tuning.compression: source)
            self._switch.codecs[self._tp] = batch.compression_type
        if not plain or (self._switch.source_dc is None and not raw):
            return batch
        # the first record says whose the batch is (the mark): decoded alone, then the rest
        handed = None
        if raw and batch.compression_type:  # decompressed once, for the mark and the helper
            handed = RawBatch(whole, batch.base_offset, batch.next_offset, batch.max_timestamp)
            try:
                head = decode_batch(whole, handed.body(), limit=1)
            except BatchError:  # the record path decodes it (and says what is wrong)
                handed, raw = None, False
        records: Any = iter(batch) if handed is None else None  # decodes from __iter__ on
        decoded = None
        try:
            first = next(records, None) if handed is None else (head[0] if head else None)
        except UnicodeDecodeError:  # a header name that is not UTF-8: aa decodes it
            if whole is None:
                raise
            decoded = decode_batch(whole)
            first = decoded[0] if decoded else None
        if first is None:  # emptied by compaction: nothing to read (nor to iterate again)
            return _Skipped(batch.base_offset, batch.next_offset)
        switch = self._switch
        if switch.source_dc is not None:
            marked = switch.marked(first.headers, batch.producer_id)
            if marked and self._skipper is not None:
                self._skipper.skipped[self._tp] += batch.next_offset - max(self._at, first.offset)
                self._at = batch.next_offset
                return _Skipped(batch.base_offset, batch.next_offset)
            # a mirror's batch, or one whose first record (and mark) compaction removed
            if switch.believed is not None and (marked or first.offset > batch.base_offset):
                switch.believed.add(self._tp, batch.base_offset, batch.next_offset)
        if decoded is not None:
            return _Decoded(batch, decoded)
        if not raw:
            return _Peeked(batch, first, records)
        assert whole is not None
        if handed is None:
            handed = RawBatch(whole, batch.base_offset, batch.next_offset, batch.max_timestamp)
        return _Raw(batch, handed)


class _Fetched:
    """aiokafka's ``MemoryRecords`` of one fetched partition, with the bytes it reads (for
    :class:`_Records`); other consumers get the ``MemoryRecords`` itself."""

    __slots__ = ("data", "records")

    def __init__(self, data: Any) -> None:
        self.data, self.records = data, _Memory(data)

    def has_next(self) -> bool:
        return bool(self.records.has_next())

    def size_in_bytes(self) -> int:
        return int(self.records.size_in_bytes())

    def next_batch(self) -> Any:
        return self.records.next_batch()


_Memory: Any = _fetcher.MemoryRecords
_Base: Any = _fetcher.PartitionRecords
_READ_COMMITTED = 1
"""aiokafka's isolation level ``read_committed`` as its fetcher spells it."""
_BASE_NAMES = ("_unpack_records", "_consume_aborted_up_to", "_contains_abort_marker")
"""What :class:`_PartitionRecords` uses of aiokafka's class (checked by :func:`install`)."""


class _PartitionRecords(_Base):  # type: ignore[misc]  # aiokafka's class is untyped
    def __init__(
        self,
        tp: TopicPartition,
        records: Any,
        aborted_transactions: Any,
        fetch_offset: int,
        key_deserializer: Any,
        value_deserializer: Any,
        check_crcs: bool,
        isolation_level: Any,
    ) -> None:
        data = None
        if type(records) is _Fetched:
            data, records = records.data, records.records
        lean = isinstance(key_deserializer, LeanRecords)
        if lean:
            records = _Records(records, tp, key_deserializer, check_crcs, fetch_offset, data)
            key_deserializer = None
            check_crcs = False  # _Records checks each batch once, and hands out a CorruptBatch
        super().__init__(
            tp, records, aborted_transactions, fetch_offset, key_deserializer,
            value_deserializer, check_crcs, isolation_level,
        )  # fmt: skip
        self._lean = lean
        if lean:
            self._records_iterator = self._lean_records()

    def __iter__(self) -> Any:
        # aiokafka's getall() iterates this object, whose __next__ is a Python frame per record
        # around the generator's own: lean consumers hand the generator out directly.
        return self._records_iterator if self._lean else self

    def _lean_records(self) -> Iterator[Any]:
        """The records of a lean consumer's fetch, as aiokafka's own generator yields them
        (aborted transactions and control batches stepped over, records before the fetch
        position dropped) but aiokafka's decoded records themselves, and a batch aiokafka
        cannot decode (a header name that is not UTF-8) decoded by aa from that record on."""
        records: _Records = self._records
        committed = self._isolation_level == _READ_COMMITTED
        while records.has_next():
            batch = records.next_batch()
            if committed and batch.producer_id is not None:
                self._consume_aborted_up_to(batch.base_offset)
                if batch.is_control_batch and self._contains_abort_marker(batch):
                    self._aborted_producers.discard(batch.producer_id)
                if batch.is_transactional and batch.producer_id in self._aborted_producers:
                    self.next_fetch_offset = batch.next_offset
                    continue
            if batch.is_control_batch:
                self.next_fetch_offset = batch.next_offset
                continue
            try:
                for record in batch:
                    if record.offset >= self.next_fetch_offset:  # else: before the position
                        self.next_fetch_offset = record.offset + 1
                        yield record
            except UnicodeDecodeError:
                if records.whole is None:
                    raise
                # aa decodes the batch; the records handed out already are before the position
                for record in decode_batch(records.whole):
                    if record.offset >= self.next_fetch_offset:
                        self.next_fetch_offset = record.offset + 1
                        yield record
            # a compacted batch keeps its last offset: the next fetch starts after it
            self.next_fetch_offset = batch.next_offset


def install() -> None:
    """Let :class:`LeanRecords` consumers get lean records, and :class:`BatchSkipper` ones skip
    batches (idempotent; see the module doc). Checks first that this aiokafka has every
    internal aa relies on (:func:`aa.kafka.private.check`)."""
    private.check()
    use_kafka_levels()
    current = getattr(_fetcher, "PartitionRecords", None)
    if current is _PartitionRecords:
        return
    if (
        current is not _Base
        or getattr(_fetcher, "MemoryRecords", None) is not _Memory
        or not all(hasattr(_Base, name) for name in _BASE_NAMES)
        or getattr(_fetcher, "READ_COMMITTED", None) != _READ_COMMITTED
    ):
        raise RuntimeError(
            "this aiokafka has no consumer.fetcher.PartitionRecords as aa knows it: aa cannot "
            "skip mirror-written batches; install the aiokafka version pyproject.toml pins"
        )
    _fetcher.PartitionRecords = _PartitionRecords
    _fetcher.MemoryRecords = _Fetched


def partition_records(tp: TopicPartition, data: bytes, switch: LeanRecords | None) -> list[Polled]:
    """What a consumer with ``switch`` as its ``key_deserializer`` gets from a fetch of ``tp``
    that returned ``data`` at offset 0 (CRCs checked, read uncommitted): offline, for the
    benchmarks. :func:`install` first, to get what a flow's consumer gets."""
    memory = _fetcher.MemoryRecords(data)
    return list(_fetcher.PartitionRecords(tp, memory, [], 0, switch, None, True, 0))
