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
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from aa.admin import ClusterAdmin
from aa.mirror.errors import FlowError
from aa.mirror.incarnations import Incarnations
from aa.mirror.pending import Batch
from aa.mirror.settings import FlowSettings
from aa.offsets.groups import GroupError, commit_group_offsets, group_offsets
from aa.offsets.writer import OffsetSyncWriter

LEARN_TIMEOUT_S = 5.0
LEARN_RETRY_S = 30.0
"""An at-least-once flow asks the source for the id of a topic it fetches for the first time
(before forwarding; at most ``LEARN_TIMEOUT_S``), and again after ``LEARN_RETRY_S`` if the
source did not answer: meanwhile its syncs are written without the id."""


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

    def rewind(self, tp: TopicPartition, offset: int) -> None:
        """``tp`` will be fetched again from ``offset``: its records from there on were not
        copied (a failed topic, :mod:`aa.mirror.control`)."""
        ...

    async def regained(self, tps: set[TopicPartition]) -> None:
        """The group assigned ``tps`` (a rebalance): at-least-once resumes each one it had
        copied further than the group's commit (its membership was lost before that commit)
        where its own copy ended, instead of copying again."""
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
    """Commit settled source offsets to the flow's group on the source (the default).

    A group with no committed offset at all at start is a new flow, or one whose offsets the
    broker deleted (the group was deleted, or empty longer than ``offsets.retention.minutes``):
    the flow then sets the group's offsets where its offset syncs say the copy of each partition
    ended, when they were written for the topic incarnation the source holds now
    (:mod:`aa.offsets.resume`), instead of copying everything the source still holds again."""

    transactional = False

    def __init__(self, settings: FlowSettings) -> None:
        self._settings = settings
        self._clients: FlowClients | None = None
        self._ids: Incarnations | None = None
        self._unknown: set[str] = set()
        """Source topics fetched whose id is not known yet."""
        self._retry_at: dict[str, float] = {}
        self._unsaved: dict[TopicPartition, int] = {}
        """Per partition, the offset after the copies the target acknowledged whose commit the
        group refused (it had dropped this member); gone once a commit reaches it (one int per
        partition: bounded)."""

    def group_id(self) -> str | None:
        return self._settings.group_id

    def producer_options(self) -> dict[str, Any]:
        return {}

    async def start(self, clients: FlowClients) -> None:
        s = self._settings
        self._clients = clients
        self._ids = Incarnations(s, clients.source_admin)
        if clients.syncs is None:
            return
        clients.syncs.topic_ids = self._ids.known
        if await group_offsets(s.source_client, s.group_id):
            return
        found = await self._ids.synced_positions(clients.consumer, {}, require_id=True)
        if not found:
            return
        detail = (
            f"consumer group {s.group_id} in {s.source} has no committed offsets (deleted, or "
            f"expired by offsets.retention.minutes while {s.name} was stopped); its offsets "
            f"for {len(found)} partition(s) are set where the offset syncs in {s.sync_topic} "
            "say the copy ended, so that they are not copied again from the beginning"
        )
        try:
            await commit_group_offsets(s.source_client, s.source, s.group_id, found)
        except GroupError as exc:  # another process of this flow joined the group meanwhile
            clients.log.warning("group_offsets_from_syncs_not_set", error=str(exc))
            return
        clients.log.warning(
            "group_offsets_from_syncs", group=s.group_id, partitions=len(found), detail=detail
        )

    async def resume_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        if self._clients is None:
            return {}
        consumer = self._clients.consumer
        return {tp: await consumer.committed(tp) for tp in tps}

    def rewind(self, tp: TopicPartition, offset: int) -> None:
        if self._unsaved.get(tp, offset) > offset:  # commits stop at ``offset`` too
            self._unsaved[tp] = offset

    async def regained(self, tps: set[TopicPartition]) -> None:
        """A partition this run had copied further than the group's commit (the commit failed:
        the group had dropped this member, e.g. the source was out of reach longer than the
        session timeout) resumes where its copies ended, and the group's offset is set there:
        copying again from the commit would duplicate what the target already acknowledged.
        Never ahead: only offsets whose copies the target acknowledged and whose commit was
        refused count; a commit past them (another member copied further meanwhile) wins; and a
        partition with no commit at all is left to the group (its topic was deleted and created
        again, offsets from 0: the old copies say nothing of it, so it is copied again, never
        skipped)."""
        mine = {tp: self._unsaved.pop(tp) for tp in tps if tp in self._unsaved}
        if not mine or self._clients is None:
            return
        consumer = self._clients.consumer
        ahead = {}
        for tp, offset in mine.items():
            committed = await consumer.committed(tp)
            if committed is not None and committed < offset:
                ahead[tp] = offset
        if not ahead:
            return
        await consumer.commit(ahead)
        for tp, offset in ahead.items():
            consumer.seek(tp, offset)
        self._clients.log.info(
            "resumed_after_own_copies",
            partitions=len(ahead),
            detail="the group's commit was behind what this process had copied (its commit "
            "failed while the group had dropped it): resumed after its own copies, not again",
        )

    def admit(self, batch: Batch) -> Batch:
        if self._ids is not None and self._clients is not None and self._clients.syncs is not None:
            known = self._ids.known
            self._unknown.update(tp.topic for tp in batch if tp.topic not in known)
        return batch

    async def before_forward(self) -> None:
        """Learn the ids of source topics fetched for the first time, before their copies'
        offset syncs are written, so that the syncs name the incarnation they describe."""
        if not self._unknown or self._ids is None:
            return
        now = time.monotonic()
        due = {t for t in self._unknown if now >= self._retry_at.get(t, 0.0)}
        if not due:
            return
        for topic in due:
            self._retry_at[topic] = now + LEARN_RETRY_S
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LEARN_TIMEOUT_S):
                await self._ids.learn(due)
        self._unknown.difference_update(self._ids.known)

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
            # A rebalance took the partitions away: a new owner re-copies from the last commit
            # (duplicates, never loss); this process, if it gets them back, resumes after its
            # own copies, acknowledged by the target (regained).
            for tp, offset in offsets.items():
                if offset > self._unsaved.get(tp, -1):
                    self._unsaved[tp] = offset
            self._clients.log.warning("commit_failed_rebalance", error=str(exc))
        else:
            for tp, offset in offsets.items():
                if self._unsaved.get(tp, offset) <= offset:
                    self._unsaved.pop(tp, None)
        return True

    def refusal(self, exc: BaseException) -> FlowError | None:
        return None

    async def abort(self) -> None:
        return None  # nothing to undo: uncommitted source offsets are simply re-copied
