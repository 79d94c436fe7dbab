"""The offset ranges one run reads: per DC, topic and partition, fixed by the probe before
Spark starts (:mod:`spark_reconcile.probe`) and recorded for the next run
(:mod:`spark_reconcile.state`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """Offsets ``[start, end)`` of one partition of one DC's topic to read."""

    dc: str
    topic: str
    logical: str
    partition: int
    start: int
    end: int
    log_start: int = 0
    """The partition's first offset still held (above 0: older records were deleted)."""
    compacted: bool = False
    """The topic's ``cleanup.policy`` includes ``compact`` (only the latest value per key)."""

    @property
    def truncated(self) -> bool:
        """Retention (or a delete) removed records this read would otherwise have seen."""
        return self.log_start > 0 and self.start == self.log_start

    @property
    def empty(self) -> bool:
        return self.end <= self.start
