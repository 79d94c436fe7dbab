"""The batch path's target batch (:mod:`aa.mirror.restamp`): aiokafka's batch builder over its
pure-Python record batch builder, whose buffer the compiled helper appends to.

aiokafka's C record batch builder keeps its buffer out of reach; its pure-Python one (a private
class) keeps it in ``_buffer`` with the batch's counters beside it. :class:`RawBuilder` is the
one place that reads and writes them (:meth:`RawBuilder.fill`, :meth:`RawBuilder.filled`); the
names are pinned by :mod:`aa.kafka.private`.
"""

from __future__ import annotations

import struct
from typing import Any

from aiokafka.producer.message_accumulator import BatchBuilder
from aiokafka.record import default_records

from aa.kafka.records import BATCH_HEADER, compress

try:
    from aa.mirror import _restamp as _helper
except ImportError:  # not built: the batch path is off (aa.mirror.restamp.available)
    _helper = None  # type: ignore[assignment]  # the module's absence is the fallback

_PyBuilder: Any = getattr(default_records, "_DefaultRecordBatchBuilderPy", None)
AVAILABLE = _PyBuilder is not None
"""Whether this aiokafka has the pure-Python record batch builder the batch path writes into."""
_CRC = struct.Struct(">I")


class _Records(_PyBuilder or object):  # type: ignore[misc]  # aiokafka is untyped
    """aiokafka's pure-Python record batch builder, its CRC taken by the helper, compressing as
    its C builder (the record path's) does: always, where the pure-Python one sends a batch
    uncompressed when compression saves nothing."""

    def _maybe_compress(self) -> bool:
        codec_id = self._compression_type
        if not codec_id:
            return False
        buf = self._buffer
        records = compress(codec_id, bytes(buf[BATCH_HEADER:]))
        del buf[BATCH_HEADER:]
        buf += records
        return True

    def _write_header(self, use_compression_type: bool = True) -> None:
        buf = self._buffer
        self.HEADER_STRUCT.pack_into(
            buf, 0,
            0, len(buf) - self.AFTER_LEN_OFFSET, self.NO_PARTITION_LEADER_EPOCH, self._magic,
            0, self._get_attributes(use_compression_type), self._last_offset,
            self._first_timestamp or 0, self._max_timestamp or 0,
            self._producer_id, self._producer_epoch, self._base_sequence, self._num_records,
        )  # fmt: skip
        with memoryview(buf) as view:
            crc = _helper.crc32c(view[self.ATTRIBUTES_OFFSET :])
        _CRC.pack_into(buf, self.CRC_OFFSET, crc)


class RawBuilder(BatchBuilder):  # type: ignore[misc]  # aiokafka is untyped
    """aiokafka's batch builder over its pure-Python record batch builder, whose buffer the
    helper appends to (the C builder's buffer is out of reach); records may also be appended
    one by one through that builder's own ``append``."""

    def __init__(self, batch_size: int, compression_type: int, *, is_transactional: bool) -> None:
        super().__init__(batch_size, compression_type, is_transactional=is_transactional)
        self._builder = _Records(2, compression_type, is_transactional, -1, -1, 0, batch_size)

    def _set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int
    ) -> None:
        self._builder.set_producer_state(producer_id, producer_epoch, base_sequence)

    def append_record(self, n: int, ts: int, key: Any, value: Any, headers: Any) -> Any:
        """One record through the pure-Python builder, by the rules of aiokafka's C builder
        (which the record path uses), so a batch ends where the record path would end it:
        a record that would reach ``batch_size`` is refused unless the batch is empty, and a
        first timestamp of -1 counts as none."""
        inner = self._builder
        if inner._first_timestamp == -1:
            inner._first_timestamp = None
        if n and len(inner._buffer) + inner.size_in_bytes(n, ts, key, value, headers) >= (
            inner._batch_size
        ):
            return None
        return inner.append(n, ts, key, value, headers)

    def fill(self) -> tuple[bytearray, int | None, int | None, int]:
        """What the helper appends to: the buffer, the first and max timestamps so far, and
        the batch size it must stay under."""
        inner = self._builder
        return inner._buffer, inner._first_timestamp, inner._max_timestamp, inner._batch_size

    def filled(self, n: int, written: int, first_ts: int | None, max_ts: int | None) -> None:
        """Count ``written`` records the helper appended after ``n`` already in the batch."""
        inner = self._builder
        inner._first_timestamp, inner._max_timestamp = first_ts, max_ts
        inner._num_records += written
        inner._last_offset = n + written - 1
