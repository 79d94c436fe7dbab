"""Delivery strategies of a flow: how copied records and the source offsets they advance are
made durable together.

:class:`AtLeastOnce` commits the source offsets to the flow's consumer group on the source after
the target acknowledged everything before them (a crash re-copies: duplicates, never loss).
:class:`~aa.mirror.eos.ExactlyOnce` wraps each run of batches, their offset syncs and the source
offsets they advance in one transaction on the target.

A strategy never calls back into the flow: it gets the flow's clients once (:meth:`start`) and
answers the flow's questions. The flow calls, in this order: ``start`` once; per fetched batch
``admit`` → ``before_forward`` → (forward, queue) → ``commit_due`` (true: the flow drains); the
commit stage calls ``commit(ready, final=False)`` now and then and ``commit(ready, final=True)``
when the flow drains (stop, rebalance, malformed record), and ``abort`` when the flow fails.
Record counts are published when the delivery says the copies are durable: on acknowledgement
(at-least-once) or when ``commit`` returns true (exactly-once; aborted copies never count).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from aa.admin import ClusterAdmin
from aa.mirror.errors import FlowError
from aa.mirror.pending import Batch
from aa.mirror.settings import FlowSettings
from aa.offsets.writer import OffsetSyncWriter


@dataclass(frozen=True, slots=True)
class FlowClients:
    """The clients of one flow run, handed to its delivery at start."""

    producer: AIOKafkaProducer
    consumer: AIOKafkaConsumer
    target_admin: ClusterAdmin
    syncs: OffsetSyncWriter | None
    log: Any
    source_admin: ClusterAdmin | None = None
    lanes: tuple[AIOKafkaProducer, ...] = ()
    """More producers for the copies beside ``producer`` (at-least-once only: see
    :data:`aa.mirror.target.LANES`); offset syncs and dead letters go through ``producer``."""


class Delivery(Protocol):
    transactional: bool
    """Copies count once committed (``commit`` returned true), not once acknowledged."""

    def group_id(self) -> str | None:
        """The source consumer group (``None``: no group, every partition assigned here)."""
        ...

    def producer_options(self) -> dict[str, Any]: ...

    async def start(self, clients: FlowClients) -> None: ...

    async def resume_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Where each partition resumes: the next offset to copy (``None``: not known, a new
        flow starts at the earliest offset)."""
        ...

    def admit(self, batch: Batch) -> Batch:
        """Drop records already copied (exactly-once resumes from the target's offsets)."""
        ...

    async def before_forward(self) -> None: ...

    async def watch(self, stop: asyncio.Event) -> None:
        """Runs beside the flow until ``stop``; raising fails the run (exactly-once: a source
        topic recreated under it). May return at once."""
        ...

    def commit_due(self) -> bool:
        """Whether the flow should drain now, so that :meth:`commit` with ``final`` runs."""
        ...

    async def commit(self, ready: Mapping[TopicPartition, int], *, final: bool) -> bool:
        """Make the settled offsets ``ready`` durable; false: keep them for a later commit."""
        ...

    def refusal(self, exc: BaseException) -> FlowError | None:
        """This delivery's own reading of a produce error (exactly-once: fenced), if any."""
        ...

    async def abort(self) -> None:
        """The flow failed: undo what is not durable yet (never raises)."""
        ...


class AtLeastOnce:
    """Commit settled source offsets to the flow's group on the source (the default)."""

    transactional = False

    def __init__(self, settings: FlowSettings) -> None:
        self._settings = settings
        self._clients: FlowClients | None = None

    def group_id(self) -> str | None:
        return self._settings.group_id

    def producer_options(self) -> dict[str, Any]:
        return {}

    async def start(self, clients: FlowClients) -> None:
        self._clients = clients

    async def resume_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        if self._clients is None:
            return {}
        consumer = self._clients.consumer
        return {tp: await consumer.committed(tp) for tp in tps}

    def admit(self, batch: Batch) -> Batch:
        return batch

    async def before_forward(self) -> None:
        return None

    async def watch(self, stop: asyncio.Event) -> None:
        return None  # the broker drops a deleted topic's group offsets with it

    def commit_due(self) -> bool:
        return False

    async def commit(self, ready: Mapping[TopicPartition, int], *, final: bool) -> bool:
        if not ready or self._clients is None:
            return True
        consumer = self._clients.consumer
        assigned = consumer.assignment()
        offsets = {tp: o for tp, o in ready.items() if tp in assigned}
        if not offsets:
            return True
        try:
            await consumer.commit(offsets)
        except (CommitFailedError, IllegalStateError) as exc:
            # A rebalance took the partitions away: the new owner re-copies from the last
            # commit (duplicates, never loss).
            self._clients.log.warning("commit_failed_rebalance", error=str(exc))
        return True

    def refusal(self, exc: BaseException) -> FlowError | None:
        return None

    async def abort(self) -> None:
        return None  # nothing to undo: uncommitted source offsets are simply re-copied
