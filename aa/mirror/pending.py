"""What travels from the route stage to the commit stage: one fetched batch's sends."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from aa.kafka.records import Fetched
from aa.mirror.errors import FlowError


@dataclass(frozen=True, slots=True)
class TopicRefusal:
    """A record the target refuses for good (``on_error: fail``): its topic fails, not the
    flow (:meth:`aa.mirror.control.FlowControl.fail_topic`); nothing of its partition is
    committed past ``offset``."""

    offset: int
    kind: str
    reason: str
    target: str
    """The target topic that refused it (its limits are read again before the retry)."""


Batch = dict[TopicPartition, Sequence[Fetched]]
"""A fetched batch: per source partition, its records (and raw batches) in offset order."""


class TopicsFailed(FlowError):
    """The target refused, for good, the copies of one or more topics as they were settled (an
    ACL refusing writes to a topic, a record too large for a limit lowered meanwhile): those
    topics fail, not the flow (:meth:`aa.mirror.control.FlowControl.fail_topic`). What else was
    sent with them is undone by a restart of the flow's run (the supervisor's, at once): an
    exactly-once transaction aborts, and every topic resumes from its committed position, the
    failed ones paused there, nothing of them committed past ``refusals``' offsets."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = "topic-failed",
        retriable: bool = True,
        refusals: dict[TopicPartition, TopicRefusal] | None = None,
    ) -> None:
        super().__init__(message, kind=kind, retriable=retriable)
        self.refusals = refusals or {}


@dataclass(slots=True)
class Pending:
    """One fetched batch on its way to the target."""

    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    """Per source partition, the offset to commit once every send is settled."""
    sends: list[tuple[asyncio.Future[Any], list[Any], str, TopicPartition]] = field(
        default_factory=list
    )
    """Per submitted batch: its delivery future, the source records it holds (in order, so
    the i-th record landed at the batch's base offset + i), the target topic and the source
    partition (fetched records carry no topic or partition: see :mod:`aa.kafka.fetched`)."""
    copied: Counter[TopicPartition] = field(default_factory=Counter)
    bytes: Counter[TopicPartition] = field(default_factory=Counter)
    timestamps: list[int] = field(default_factory=list)
    fetched_ms: int = 0
    """When it was routed (its records' age then: ``aa_record_age_seconds``)."""
    held_bytes: int = 0
    """Key and value bytes reserved for it in the flow's in-flight budget (released once
    settled)."""
    failed: dict[TopicPartition, TopicRefusal] = field(default_factory=dict)
    """Partitions stopped at a record refused for good (``on_error: fail``): ``offsets`` stop
    at that record; the flow fails its topic and goes on with the others."""
    malformed: FlowError | None = None
    """Set when a refused record stops the flow (``on_error: fail``): ``offsets`` stop at it."""

    def counts(self) -> Copies:
        """What counting it needs once settled, without its sends or records."""
        return Copies(self.copied, self.bytes, self.timestamps, self.fetched_ms)


@dataclass(frozen=True, slots=True)
class Copies:
    """A settled batch's copies as counted: records and bytes per source partition, their
    timestamps, when it was routed. Exactly-once keeps these until the transaction commits
    (up to ``commit_interval_s`` and a drain), not the :class:`Pending`: its sends hold the
    source records, and on the batch path each of those holds its whole fetched partition
    buffer (skipped mirror batches too), past the in-flight share that released them."""

    copied: Counter[TopicPartition]
    bytes: Counter[TopicPartition]
    timestamps: list[int]
    fetched_ms: int
