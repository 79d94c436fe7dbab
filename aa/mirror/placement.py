"""Where a source partition's records go in the target: the target topic, its partition count,
whether records keep their partition, and what the target topic refuses. Kept up to date by
the flow's periodic topic sync (:meth:`Placement.sync_loop`)."""

from __future__ import annotations

import asyncio
import contextlib

from aiokafka import TopicPartition
from aiokafka.errors import UnknownTopicOrPartitionError

from aa.mirror.context import StageContext
from aa.mirror.errors import FlowError, is_crash
from aa.mirror.limits import TargetLimits, target_limits
from aa.mirror.pending import Pending, TopicRefusal
from aa.mirror.topics import TopicSync
from aa.observe.metrics import Metrics


class Placement:
    """Per target topic: partitions, partition keeping and limits, read when first seen."""

    def __init__(self, ctx: StageContext, topics: TopicSync) -> None:
        self.ctx = ctx
        self.topics = topics
        self.limits: dict[str, TargetLimits] = {}
        """Per target topic, what it refuses (read when first seen, refreshed by topic sync)."""
        self._keep_partitions: dict[str, bool] = {}
        """Per target topic: records keep their source partition (else: by key hash)."""
        self._lacking: set[tuple[str, int]] = set()
        """(target topic, partition) the target lacked after an immediate topic sync."""
        self.topic_sync_error: str | None = None
        """The last periodic topic sync's error (``None`` once one succeeds); in /healthz."""

    async def target_topic(self, source_topic: str) -> str | None:
        """The target topic of ``source_topic`` (``None``: not copied), known to the flow."""
        target = self.ctx.router.target_topic(source_topic)
        if target is None:
            return None
        if target not in self.topics.partitions:
            if self.ctx.settings.topic_sync:
                await self.topics.sync(only=source_topic)
            if target in self.topics.refused:  # its topic fails: see refused()
                return target
            if target not in self.topics.partitions:
                try:
                    parts = await self.ctx.clients.producer.partitions_for(target)
                except UnknownTopicOrPartitionError as exc:
                    raise self._missing(target) from exc
                self.topics.partitions[target] = len(parts)
        if target not in self.limits:
            found = await target_limits(self.ctx.clients.target_admin, [target])
            self.limits[target] = found.get(target, TargetLimits(target))
        return target

    def refuses(self, target: str) -> bool:
        """Whether the target refused to create ``target`` for good (its topic fails)."""
        return target in self.topics.refused

    def refused(self, pending: Pending, tp: TopicPartition, offset: int, target: str) -> None:
        """The target refuses for good to create ``target``: ``tp`` stops at ``offset`` (its
        first record fetched) and its topic fails, not the flow; each retry tries again."""
        why = self.topics.refused[target]
        pending.offsets[tp] = offset
        pending.failed[tp] = TopicRefusal(
            offset,
            "topic-refused",
            f"{why}; the topic stops (the flow's other topics go on) and is tried again with "
            "backoff: leave its source topic out of this flow (topics.exclude), or rename it; "
            "it resumes by itself once the target creates it, or on `aa resume`",
            target,
        )

    def _missing(self, target: str) -> FlowError:
        """The target topic does not exist: which, where and the fix; retried with backoff, so
        copying starts by itself once the topic is there."""
        s = self.ctx.settings
        why = (
            "topic sync did not create it (see topic_sync_failed in the log)"
            if s.topic_sync
            else "topic_sync.enabled is false, so aa does not create it: create it there "
            "(or set topic_sync.enabled: true)"
        )
        return FlowError(
            f"{s.name}: target topic {target} does not exist in {s.target} and {why}; the "
            "flow retries with backoff",
            kind="target-topic-missing",
            retriable=True,
        )

    async def place(self, tp: TopicPartition, target: str) -> tuple[int, bool]:
        """The target's partition count, and whether ``tp``'s records keep their partition.

        Decided once per target topic, when first seen: keep partitions when the target has at
        least the source's (topic sync grows a target with fewer first, in either loop-prevention
        mode), otherwise every record goes by key hash (one key never lands in two partitions).
        When the source grows later, a partition the target lacks triggers a topic sync right
        away, so no record of an existing partition ever changes target partition while topic
        sync catches up; only if the target still lacks it (topic sync off, or the grow
        refused) do its records go by key hash (with a warning).
        """
        parts = self.topics.partitions.get(target, 0)
        keep = self._keep_partitions.get(target)
        if keep is None:
            source_parts = len(self.ctx.clients.consumer.partitions_for_topic(tp.topic) or ())
            if parts < source_parts and self.ctx.settings.topic_sync:
                parts = await self._synced(tp.topic, target)  # an admin listing behind ours
            keep = self._keep_partitions[target] = parts >= source_parts
        if keep and tp.partition >= parts and (target, tp.partition) not in self._lacking:
            parts = await self._grow_target(tp, target)
        return parts, keep and tp.partition < parts

    async def _synced(self, source_topic: str, target: str) -> int:
        """Topic sync of ``source_topic`` now (it grows a target with fewer partitions); the
        target's partition count after, as the producer sees it."""
        if self.ctx.settings.topic_sync:
            await self.topics.sync(only=source_topic)
        await self.ctx.clients.producer.client.force_metadata_update()
        parts = len(await self.ctx.clients.producer.partitions_for(target))
        self.topics.partitions[target] = parts
        return parts

    async def _grow_target(self, tp: TopicPartition, target: str) -> int:
        """Topic sync now for a source partition the target lacks; the target's count after."""
        parts = await self._synced(tp.topic, target)
        if tp.partition >= parts:
            self._lacking.add((target, tp.partition))  # tried once; periodic syncs go on
            self.ctx.clients.log.warning(
                "target_lacks_partition",
                topic=target,
                partition=tp.partition,
                target_partitions=parts,
                detail="its records go by key hash until the target has the partition",
            )
        return parts

    async def sync_loop(self, stop: asyncio.Event, metrics: Metrics) -> None:
        """Topic sync every ``topic_sync_interval_s`` until ``stop``; best effort: a failure is
        logged, counted and shown in /healthz, and copying goes on."""
        s = self.ctx.settings
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), s.topic_sync_interval_s)
            if stop.is_set():
                return
            try:
                await self.topics.sync()
                self.topic_sync_error = None
                self.limits.update(await target_limits(self.ctx.clients.target_admin, self.limits))
            except Exception as exc:  # logged and counted: sync is best effort; copying goes on
                self.topic_sync_error = repr(exc)
                metrics.errors.labels(**s.labels, kind="topic-sync").inc()
                log = self.ctx.clients.log
                if is_crash(exc):  # a defect: its traceback
                    log.warning("topic_sync_failed", error=repr(exc), exc_info=exc)
                else:  # a DC down, an explained refusal: one line per interval
                    log.warning("topic_sync_failed", error=repr(exc))
