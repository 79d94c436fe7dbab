"""The checkpoint loop of one flow A→B (runs in B's mirror process): every interval, translate
the committed offsets of A's selected groups into B offsets, write the ones that advanced to
B's checkpoint topic, and — when ``apply`` is set — move B's copy of a group forward to its
checkpoint, only while that group has no members in B and never backwards."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin
from aa.checkpoints.model import Checkpoint, CheckpointDecodeError, Checkpoints
from aa.config import Topology, client_kwargs, names
from aa.errors import AaError
from aa.lifecycle import started
from aa.logs import get_logger
from aa.observe.metrics import Metrics
from aa.offsets.groups import commit_group_offsets, group_offsets, group_state, list_groups
from aa.offsets.live import needed, sync_topic
from aa.offsets.store import OffsetSyncStore
from aa.offsets.translate import translate_offset
from aa.offsets.writer import COMPACTED_INTERNAL_CONFIGS, ensure_internal_topic
from aa.policy.naming import is_internal
from aa.tail import TopicReader, Unreadable

CHECKPOINT_TOPIC_CONFIGS = dict(COMPACTED_INTERNAL_CONFIGS)
"""One record per group partition after compaction (segments roll small, so it happens)."""


class CheckpointWriteError(AaError):
    """The target refused a checkpoint; the state did not advance past it."""


def checkpoint_topic(topology: Topology, source: str, target: str) -> str:
    return names.for_flow(topology.checkpoints.topic, source, target)


def selected(topology: Topology, groups: list[str]) -> list[str]:
    f = topology.checkpoints.groups
    inc = [re.compile(p) for p in f.include]
    exc = [re.compile(p) for p in f.exclude]
    return [
        g
        for g in groups
        if not names.is_own_group(g)
        and any(p.fullmatch(g) for p in inc)
        and not any(p.fullmatch(g) for p in exc)
    ]


async def read_checkpoints(topic: str, client: Mapping[str, Any]) -> Checkpoints:
    """The checkpoints written so far (a restarted task never steps back). A record that is
    not a checkpoint is skipped with a warning: it can only make the task write one again."""
    state = Checkpoints()
    skipped = Unreadable("checkpoints_unreadable", "records that are not checkpoints are skipped")
    async with TopicReader(topic, client) as reader:
        for r in await reader.catch_up():
            try:
                state.remember([Checkpoint.decode(r.value)] if r.value else [])
            except CheckpointDecodeError as exc:
                skipped.skip(r, exc)
    skipped.warn(topic)
    return state


class CheckpointTask:
    def __init__(
        self, topology: Topology, source: str, target: str, metrics: Metrics | None = None
    ) -> None:
        self.topology = topology
        self.metrics = metrics
        self.source, self.target = source, target
        self.topic = checkpoint_topic(topology, source, target)
        self._src = client_kwargs(topology.datacenter(source))
        self._dst = client_kwargs(topology.datacenter(target))
        self.state = Checkpoints()
        self._stores: dict[tuple[str, str], tuple[TopicReader, OffsetSyncStore]] = {}
        self._producer: AIOKafkaProducer | None = None
        self.emitted = 0
        self.applied = 0
        self.log = get_logger("aa.checkpoints", flow=f"{source}->{target}")

    async def run(self, stop: asyncio.Event) -> None:
        """Every interval, :meth:`once`. A failure propagates: the supervisor logs it with its
        cause, counts it and restarts this loop with backoff (state is re-read on restart)."""
        try:
            while not stop.is_set():
                await self.once()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.topology.checkpoints.interval_s)
        finally:
            await self.close()

    async def close(self) -> None:
        for reader, _ in self._stores.values():
            await reader.close()
        self._stores.clear()
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def _start(self) -> AIOKafkaProducer:
        if self._producer is None:
            rf = self.topology.topic_sync.replication_factor
            async with ClusterAdmin(self.target, replication_factor=rf, **self._dst) as admin:
                await ensure_internal_topic(admin, self.topic, CHECKPOINT_TOPIC_CONFIGS)
            self.state = await read_checkpoints(self.topic, self._dst)
            producer = AIOKafkaProducer(**self._dst, acks="all", enable_idempotence=True)
            await started(producer)
            self._producer = producer
        return self._producer

    async def _catch_up_stores(self) -> dict[tuple[str, str], OffsetSyncStore]:
        for src, dst in needed(self.topology, self.source, self.target):
            if (src, dst) not in self._stores:
                client = client_kwargs(self.topology.datacenter(dst))
                reader = TopicReader(sync_topic(self.topology, src, dst), client)
                await reader.start()
                self._stores[(src, dst)] = (reader, OffsetSyncStore(src, dst))
        for reader, store in self._stores.values():
            await store.catch_up(reader)
        return {k: store for k, (_, store) in self._stores.items()}

    async def once(self) -> list[Checkpoint]:
        """One pass; returns the checkpoints written."""
        producer = await self._start()
        stores = await self._catch_up_stores()
        now = int(time.time() * 1000)
        out: list[Checkpoint] = []
        for group in selected(self.topology, await list_groups(self._src)):
            offsets = await group_offsets(self._src, group)
            for tp, offset in sorted(offsets.items()):
                if is_internal(tp.topic):
                    continue
                plan = translate_offset(
                    tp.topic, tp.partition, offset, self.source, self.target, stores
                )
                if plan.target_offset is None or plan.target_topic is None:
                    continue
                cp = Checkpoint(
                    group,
                    tp.topic,
                    tp.partition,
                    offset,
                    plan.target_topic,
                    plan.target_offset,
                    plan.exactness,
                    now,
                )
                if self.state.would_advance(cp):
                    out.append(cp)
        out = await self._write(producer, out)
        self.emitted += len(out)
        if self.metrics is not None and out:
            self.metrics.checkpoints.labels(source=self.source, target=self.target).inc(len(out))
            took = max(0.0, time.time() - now / 1000)  # from reading the offsets to the acks
            latency = self.metrics.checkpoint_latency.labels(source=self.source, target=self.target)
            for _ in out:
                latency.observe(took)
        if out:
            self.log.info("checkpoints_written", count=len(out))
        if self.topology.checkpoints.apply:
            for group in sorted({cp.group for cp in out}):
                await self.apply(group)
        return out

    async def _write(self, producer: AIOKafkaProducer, cps: list[Checkpoint]) -> list[Checkpoint]:
        """Send ``cps`` and remember those the target acknowledged; raise if any failed.

        The state advances only past a checkpoint that was written, so a refused one is sent
        again on the next pass instead of being forgotten (a flush does not report failures).
        """
        futures = [await producer.send(self.topic, cp.encode(), cp.key()) for cp in cps]
        results = await asyncio.gather(*futures, return_exceptions=True)
        written, errors = [], []
        for cp, result in zip(cps, results, strict=True):
            if isinstance(result, BaseException):
                errors.append(result)
            else:
                self.state.advance(cp)
                written.append(cp)
        if errors:
            if self.metrics is not None:
                self.metrics.errors.labels(
                    source=self.source, target=self.target, kind="checkpoint-write"
                ).inc(len(errors))
            raise CheckpointWriteError(
                f"{self.source}->{self.target}: writing {len(errors)} of {len(cps)} checkpoints "
                f"to {self.topic} in {self.target} failed: {errors[0]!r}"
            ) from errors[0]
        return written

    async def apply(self, group: str) -> bool:
        """Move ``group`` in the target forward to its checkpoints if it is idle there."""
        state = await group_state(self._dst, group)
        if state.active:
            self.log.info("checkpoint_not_applied_active", group=group, state=state.state)
            return False
        current = await group_offsets(self._dst, group)
        moves = {}
        for cp in self.state.for_group(group):
            tp = TopicPartition(cp.target_topic, cp.partition)
            if cp.downstream > current.get(tp, -1):
                moves[tp] = cp.downstream
        if moves:
            await commit_group_offsets(self._dst, self.target, group, moves)
            self.applied += len(moves)
            self.log.info("checkpoints_applied", group=group, partitions=len(moves))
        return bool(moves)
