"""The flow consumer's switch (:mod:`aa.kafka.fetched`): what it hands out, and which of the
fetched record batches a mirror wrote into the source DC.

The mirror marks every batch it writes into DC A with ``aa-batch: A/<producer id>`` on its
first record (:func:`aa.provenance.batch_mark`), and the broker gives each producer its own id:
a batch carries that mark with its own producer id only when a mirror wrote it into A. A mark
copied by an application that re-produces a record sits in a batch with the application's
producer id, and is never believed.

What a flow does with that:

* **provenance is believed only there** (:class:`MirrorRanges`). An application that reads a
  mirrored record and writes it again into the same topic, headers and all, writes a record
  that looks like a mirror's copy by its headers alone; believed, every flow would skip it as
  a copy and it would never leave its DC. Outside mirror-written batches a record is local and
  gets fresh provenance. Two kinds of unmarked batch are still judged by their headers, as
  before marks existed: one whose first record compaction removed (the mark went with it; its
  first record is then past its base offset), and a record older than
  ``loop_prevention.unmarked_copies_before`` (:mod:`aa.policy.router`);
* **a flow that never forwards mirrored records skips such batches unread**
  (:class:`BatchSkipper`, headers mode in a full mesh): their records never reach it.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiokafka.structs import TopicPartition

from aa.provenance import BATCH, batch_marked_by


def _never(offset: int) -> bool:
    return False


class MirrorRanges:
    """Per source partition, the offset ranges of fetched batches whose records' provenance
    counts; added as the consumer decodes batches, released once routed (memory follows what
    is fetched and not yet routed)."""

    def __init__(self) -> None:
        self._bases: dict[TopicPartition, list[int]] = {}
        self._ends: dict[TopicPartition, list[int]] = {}

    def add(self, tp: TopicPartition, base: int, end: int) -> None:
        """Believe the records of ``[base, end)`` of ``tp``."""
        bases, ends = self._bases.setdefault(tp, []), self._ends.setdefault(tp, [])
        if not bases or base > bases[-1]:
            bases.append(base)
            ends.append(end)
            return
        i = bisect.bisect_left(bases, base)  # fetched again after a seek back
        if i < len(bases) and bases[i] == base:
            ends[i] = end
        else:
            bases.insert(i, base)
            ends.insert(i, end)

    def covers(self, tp: TopicPartition, offset: int) -> bool:
        bases = self._bases.get(tp)
        if not bases:
            return False
        i = bisect.bisect_right(bases, offset) - 1
        return i >= 0 and offset < self._ends[tp][i]

    def believed(self, tp: TopicPartition) -> Callable[[int], bool]:
        """Whether the record at an offset of ``tp`` is in a batch whose provenance counts."""
        if not self._bases.get(tp):
            return _never
        return lambda offset: self.covers(tp, offset)

    def release(self, tp: TopicPartition, before: int) -> None:
        """Forget the ranges of ``tp`` that end at or before ``before`` (routed)."""
        ends = self._ends.get(tp)
        if not ends or ends[0] > before:
            return
        n = bisect.bisect_right(ends, before)  # batches do not overlap: ends rise with bases
        del self._bases[tp][:n], ends[:n]


class LeanRecords:
    """The per-consumer switch: pass it as the consumer's ``key_deserializer`` to get
    aiokafka's decoded records as they are (:mod:`aa.kafka.fetched`). With ``source_dc`` the
    consumer also tells mirror-written batches apart (:attr:`believed`)."""

    raw = False
    """Hand out eligible batches undecoded (:class:`~aa.kafka.records.RawBatch`)."""

    def __init__(self, source_dc: str | None = None) -> None:
        self.source_dc = source_dc
        self.believed = MirrorRanges() if source_dc is not None else None
        """Where provenance counts (``None``: not told apart, a tool's consumer)."""
        self.codecs: dict[TopicPartition, int] = {}
        """Per partition, the compression codec of the newest batch handed out (control batches
        aside): what its copies keep with ``tuning.compression: source``."""

    def marked(self, first_headers: Any, producer_id: int | None) -> bool:
        """Whether a batch with this first record's headers and producer id is a mirror's."""
        assert self.source_dc is not None
        for key, value in first_headers:
            if key == BATCH:
                return batch_marked_by(value, self.source_dc, producer_id)
        return False

    def __call__(self, key: bytes | None) -> bytes | None:  # never called: see _PartitionRecords
        return key


class BatchSkipper(LeanRecords):
    """Lean records, and mirror-written batches skipped: the switch and its tally."""

    def __init__(self, source_dc: str) -> None:
        super().__init__(source_dc)
        self.skipped: Counter[TopicPartition] = Counter()
        """Offsets skipped per partition since the last :meth:`take` (mirror-written batches)."""

    def take(self) -> Counter[TopicPartition]:
        out, self.skipped = self.skipped, Counter()
        return out
