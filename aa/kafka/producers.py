"""What aa sets and reads inside an aiokafka producer and its batches that aiokafka has no
public call for (see :mod:`aa.kafka.private`): the producer id, an accumulator that waits for
a leader, failing what is queued, and the hot path's append and seal.

The broker gives an idempotent (or transactional) producer its id as it starts; aiokafka keeps
it on the producer's transaction manager. aa marks each batch it writes with that id (the
``aa-batch`` header, :func:`aa.provenance.batch_mark`), so the flows out of a DC believe
provenance only in batches a mirror (or a repair) wrote."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.producer.message_accumulator import BatchBuilder as BatchBuilder  # re-exported

from aa.kafka.builders import RawBuilder


def producer_id(producer: AIOKafkaProducer) -> int | None:
    """The broker-given id of a started idempotent producer; ``None`` when it has none."""
    manager = getattr(producer, "_txn_manager", None)  # None on a fake
    pid = getattr(manager, "producer_id", None)
    return pid if isinstance(pid, int) and pid >= 0 else None


def transaction_error(producer: AIOKafkaProducer) -> BaseException | None:
    """The error that broke the producer's open transaction (an AddPartitionsToTxn the target's
    ACL refused), read so it counts as seen: aiokafka sets it on a waiter its abort then
    replaces unread, and asyncio would log that future's error at ERROR as it is collected."""
    manager = getattr(producer, "_txn_manager", None)  # None on a fake
    waiter = getattr(manager, "_transaction_waiter", None)
    if not isinstance(waiter, asyncio.Future) or not waiter.done() or waiter.cancelled():
        return None
    return waiter.exception()


Append = Callable[[int, int, Any, Any, Any], Any]
"""``append(n, timestamp, key, value, headers)``: ``n`` the records already in the batch; the
record's metadata, or ``None`` when the batch is full."""


def never_expire(producer: AIOKafkaProducer) -> None:
    """Make the producer wait for a partition's leader instead of expiring the batch.

    aiokafka fails a queued batch whose partition has had no leader for ``request_timeout_ms``
    (``NotLeaderForPartitionError``) even on an idempotent producer, and then sends the batches
    queued behind it: the target gets records out of order, and the flow's restart copies them
    again. No option controls it: the accumulator's private TTL is set here (pinned by
    :mod:`aa.kafka.private`: if a later aiokafka renames it, aa refuses to start rather than
    silently reorder).
    """
    producer._message_accumulator._batch_ttl = float("inf")


def abandon(producer: AIOKafkaProducer, exc: BaseException) -> None:
    """Fail every batch not acknowledged yet with ``exc``, so stopping does not wait for a
    target that is down, and nothing queued behind a failed batch is sent after it."""
    producer._message_accumulator.fail_all(exc)


def appender(builder: Any) -> Append:
    """The hot path's append for ``builder`` (:data:`Append`). For aiokafka's
    ``BatchBuilder`` this is its record-batch builder's own append (its wrapper adds a Python
    frame, a serializer call and a counter per record: a seventh of a W1 flow's CPU), so
    :func:`seal` must give the builder its record count before it is sent. Anything else
    (test fakes) goes through its ``append``."""
    if type(builder) is RawBuilder:
        return builder.append_record
    if type(builder) is BatchBuilder:
        return builder._builder.append  # type: ignore[no-any-return]
    return lambda n, ts, key, value, headers: builder.append(
        timestamp=ts, key=key, value=value, headers=headers
    )


def seal(builder: Any, count: int) -> None:
    """Give a builder filled through :func:`appender` its record count (the producer numbers
    an idempotent batch's sequence by it), and close it: nothing is appended to a batch once
    it is handed over, and aiokafka holds an open batch ``linger_ms`` before sending it (the
    hot path's append bypasses the wrapper that would close a full one), so every copied
    batch waited out the linger (half of W1's copy time at linger 5 ms)."""
    if type(builder) in (BatchBuilder, RawBuilder):
        builder._relative_offset = count
        builder.close()


class TargetBatch:
    """One target partition's open batch on the hot path: the builder, the source records it
    holds (for the settle stage; a list, or :class:`aa.mirror.restamp.Held` on the batch
    path), its :data:`Append`, and the producer lane that will send it."""

    __slots__ = ("append", "builder", "held", "lane", "raw")

    def __init__(self, builder: Any, held: Any, lane: int) -> None:
        self.builder, self.held, self.lane = builder, held, lane
        self.append: Append = appender(builder)
        self.raw = type(builder) is RawBuilder
        """Whether the batch path's helper may append to it (:mod:`aa.mirror.restamp`)."""

    def seal(self) -> None:
        """Close it with its record count (:func:`seal`): nothing is appended after."""
        seal(self.builder, len(self.held))
