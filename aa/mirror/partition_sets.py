"""An exactly-once flow split in partition sets, so that more than one process copies it.

An exactly-once flow commits its copies and their source positions in transactions of one
transactional id, and a second process with that id fences the first: one process copied the
whole flow. With ``exactly_once.partition_sets: N`` the flow's source partitions fall in N fixed
sets (:func:`set_of`), each copied in transactions of its own id (``aa.eos.<A>.<B>.<k>-of-<N>``).
The processes of the flow join its consumer group on the source (``aa.mirror.<A>.<B>``) only to
share the sets: the group's assignor (:func:`assignor`) gives each member whole sets, and a
member runs one :class:`~aa.mirror.flow.MirrorFlow` per set it holds, given the set's
partitions and its own transactional producer.

Fencing, as Kafka Connect's exactly-once source does per task (KIP-618): the set is the unit of
work and its transactional id is fixed, so the process that takes a set over initialises a
producer with that id, which fences whoever held the set before (a process the group dropped
but still running: a zombie) and aborts its open transaction, before the new holder reads the
set's positions. A rebalance first stops every set this process runs (drained, transactions
committed), so normally the new holder fences no one. Each stored position names the id that
wrote it: a set's run also fences the ids that stored its partitions last under another
``partition_sets`` (as KIP-618 fences the tasks of an older task count).

A process holds at most the sets the group gives it; one with more sets than processes runs
several (a transaction each), one beyond ``N`` processes holds none (a standby).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import InconsistentGroupProtocolError

from aa.kafka import groups
from aa.lifecycle import started
from aa.logs import get_logger
from aa.mirror.build import MIN_FLOW_BUDGET_MB
from aa.mirror.control import FlowControl
from aa.mirror.errors import FlowError
from aa.mirror.flow import REBALANCE_TIMEOUT_MS, MirrorFlow
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from aa.protocols import Router, RunningFlow


def set_of(tp: TopicPartition, sets: int) -> int:
    """The partition set of ``tp``, the same in every process: consecutive partitions of a
    topic fall in consecutive sets."""
    return (zlib.crc32(tp.topic.encode()) + int(tp.partition)) % sets


def split(partitions: Iterable[TopicPartition], sets: int) -> dict[int, list[TopicPartition]]:
    """``partitions`` by partition set, each set's in order."""
    out: dict[int, list[TopicPartition]] = {}
    for tp in sorted(partitions):
        out.setdefault(set_of(tp, sets), []).append(tp)
    return out


def share(sets: int, members: Sequence[str]) -> dict[str, list[int]]:
    """Each member's sets: set ``k`` to the ``k mod M``-th member in id order."""
    ordered = sorted(members)
    out: dict[str, list[int]] = {m: [] for m in ordered}
    for k in range(sets):
        out[ordered[k % len(ordered)]].append(k)
    return out


def assignor(sets: int) -> type:
    """The group assignor for ``sets`` partition sets: each member gets the partitions of its
    sets (:func:`share`). Its protocol name carries the count, so processes of one flow
    configured with different counts never share sets: the group refuses the newcomer
    (:data:`MISMATCH`)."""

    def split_sets(
        found: Sequence[TopicPartition], members: Sequence[str]
    ) -> dict[str, list[TopicPartition]]:
        by_set = split(found, sets)
        return {
            m: [tp for k in ks for tp in by_set.get(k, ())]
            for m, ks in share(sets, members).items()
        }

    return groups.assignor(f"aa-partition-sets-{sets}", split_sets)


@dataclass(frozen=True, slots=True)
class _SetRun:
    flow: RunningFlow
    stop: asyncio.Event
    task: asyncio.Task[None]


class _Membership(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka is untyped
    def __init__(self, flow: PartitionSetFlow) -> None:
        self._flow = flow

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._flow.stop_sets("rebalance")

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self._flow.start_sets(set(assigned))


class PartitionSetFlow:
    """This process's share of an exactly-once flow split in partition sets: one membership
    consumer in the flow's group (it fetches nothing: every partition it is given stays
    paused), and one flow run per set held. ``run`` returns when ``stop`` is set, and raises
    what failed a set's run (the supervisor restarts the whole, which rejoins the group)."""

    def __init__(
        self,
        settings: FlowSettings,
        router: Router,
        metrics: Metrics,
        make_run: Callable[[FlowSettings, Router, Metrics], RunningFlow] = MirrorFlow,
    ) -> None:
        self.settings, self.router, self.metrics = settings, router, metrics
        self.log = get_logger("aa.mirror", flow=settings.name)
        self.control = FlowControl(settings.name, settings.max_bytes_per_s)
        self.load_control: Callable[[], Awaitable[FlowControl]] | None = None
        self._make_run = make_run
        self._runs: dict[int, _SetRun] = {}
        self._consumer: AIOKafkaConsumer | None = None

    async def run(self, stop: asyncio.Event) -> None:
        s = self.settings
        if self.load_control is not None:  # the sets' runs share it: one flow's pauses
            self.control = await self.load_control()
        consumer = self._consumer = AIOKafkaConsumer(
            **s.source_client,
            group_id=s.group_id,
            enable_auto_commit=False,
            partition_assignment_strategy=(assignor(s.partition_sets),),
            metadata_max_age_ms=int(s.topic_sync_interval_s * 1000),
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        )
        await started(consumer)
        try:
            consumer.subscribe(pattern=self.router.subscription(), listener=_Membership(self))
            self.log.info("partition_sets_joining", group=s.group_id, sets=s.partition_sets)
            while not stop.is_set():
                try:  # membership only: every partition is paused, nothing is fetched
                    await consumer.getmany(timeout_ms=500)
                except InconsistentGroupProtocolError as exc:
                    raise FlowError(MISMATCH.format(s=s), kind="config", retriable=True) from exc
                self._raise_failed()
        finally:
            await self.stop_sets("stop")
            await consumer.stop()

    def start_sets(self, assigned: set[TopicPartition]) -> None:
        """Run a flow for each partition set in ``assigned`` (none runs now: a rebalance
        stopped them first)."""
        assert self._consumer is not None
        self._consumer.pause(*assigned)
        s = self.settings
        by_set = split(assigned, s.partition_sets)
        mb = max(MIN_FLOW_BUDGET_MB, s.memory_budget_mb // max(1, len(by_set)))  # the flow's share
        for k, tps in sorted(by_set.items()):
            settings = replace(s, partition_set=k, assigned=tuple(tps), memory_budget_mb=mb)
            flow = self._make_run(settings, self.router, self.metrics)
            flow.load_control = self._control
            stop = asyncio.Event()
            task = asyncio.create_task(flow.run(stop), name=f"{s.name} set {k}")
            self._runs[k] = _SetRun(flow, stop, task)
        self.log.info("partition_sets_assigned", sets=sorted(by_set), partitions=len(assigned))

    async def stop_sets(self, why: str) -> None:
        """Stop every set's run and wait for it: drained, its last transaction committed
        (before a rebalance gives the sets away, or at stop)."""
        runs, self._runs = self._runs, {}
        for r in runs.values():
            r.stop.set()
        for k, r in runs.items():
            try:
                await r.task
            except Exception as exc:  # noqa: BLE001 - the set's next holder fences and resumes
                self.log.warning("partition_set_stop_failed", set=k, why=why, error=repr(exc))

    def _raise_failed(self) -> None:
        for r in self._runs.values():
            if r.task.done() and not r.task.cancelled() and r.task.exception() is not None:
                raise r.task.exception()  # type: ignore[misc]  # checked just above

    async def _control(self) -> FlowControl:
        return self.control

    def partitions(self) -> dict[TopicPartition, int | None]:
        """The source partitions the sets held here copy (see :meth:`MirrorFlow.partitions`)."""
        out: dict[TopicPartition, int | None] = {}
        for r in self._runs.values():
            out.update(r.flow.partitions())
        return out

    @property
    def topic_sync_error(self) -> str | None:
        return next((e for r in self._runs.values() if (e := r.flow.topic_sync_error)), None)


MISMATCH = (
    "{s.name}: another process of this flow runs with another exactly_once.partition_sets "
    "(this one: {s.partition_sets}), and the flow's group {s.group_id} in {s.source} refuses "
    "to mix them: give every process of the flow the same exactly_once.partition_sets"
)


def flow_for(settings: FlowSettings, router: Router, metrics: Metrics) -> RunningFlow:
    """The run of one flow: split in partition sets (exactly-once with
    ``partition_sets`` > 1) or whole."""
    if settings.delivery == "exactly-once" and settings.partition_sets > 1:
        return PartitionSetFlow(settings, router, metrics)
    return MirrorFlow(settings, router, metrics)
