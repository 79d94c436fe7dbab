"""The offset-sync value: where a contiguous run of copied records landed in the target.

A flow writes one :class:`OffsetSync` per contiguous run of copied records (split wherever the
source offsets jump: skipped records, compaction gaps), so every copied record's target offset
is known exactly: record ``s`` in ``[source_first, source_last]`` landed at
``target_first + (s - source_first)``; the source offsets in ``[covered_from, source_first)``
were not copied by this flow. Offsets are per partition; the target partition equals the source
partition (translation is refused where the target was repartitioned by key hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from aa.errors import AaError


class SyncDecodeError(AaError):
    """An offset-sync record cannot be read (written by something else?)."""


@dataclass(frozen=True, slots=True)
class OffsetSync:
    topic: str
    partition: int
    target_topic: str
    covered_from: int
    source_first: int
    source_last: int
    target_first: int

    @property
    def target_last(self) -> int:
        return self.target_first + (self.source_last - self.source_first)

    def key(self) -> bytes:
        return f"{self.topic}/{self.partition}".encode()

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "topic": self.topic,
                "partition": self.partition,
                "target_topic": self.target_topic,
                "from": self.covered_from,
                "first": self.source_first,
                "last": self.source_last,
                "target": self.target_first,
            }
        )

    @staticmethod
    def decode(value: bytes) -> OffsetSync:
        try:
            d = orjson.loads(value)
            return OffsetSync(
                str(d["topic"]),
                int(d["partition"]),
                str(d["target_topic"]),
                int(d["from"]),
                int(d["first"]),
                int(d["last"]),
                int(d["target"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise SyncDecodeError(f"not an offset sync: {value[:80]!r} ({exc})") from exc


def runs(
    topic: str,
    partition: int,
    target_topic: str,
    source_offsets: Sequence[int],
    target_base: int,
    covered_from: int,
) -> list[OffsetSync]:
    """Split one produced batch (records at ``target_base + i`` in order) into contiguous runs.

    ``covered_from`` is the first source offset not accounted for by an earlier sync.
    """
    out: list[OffsetSync] = []
    if not source_offsets:
        return out
    start = 0
    for i in range(1, len(source_offsets) + 1):
        if i == len(source_offsets) or source_offsets[i] != source_offsets[i - 1] + 1:
            first, last = source_offsets[start], source_offsets[i - 1]
            out.append(
                OffsetSync(
                    topic, partition, target_topic, covered_from, first, last, target_base + start
                )
            )
            covered_from = last + 1
            start = i
    return out
