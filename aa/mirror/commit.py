"""The commit stage: settle pendings in the order they were fetched, then make the settled
source offsets durable through the delivery strategy — now and then while copying, and in
full when the flow drains (stop, rebalance, a transaction due, a refused record).

Never ahead: an offset reaches ``ready`` only after every send before it settled. Offset syncs
are written at most once per partition per flush interval while copying and in full at a final
commit (a drain, a stop, an exactly-once transaction): a commit ahead of the syncs makes
translation behind (copies read again), never ahead."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from aa.mirror.context import StageContext
from aa.mirror.errors import FlowError
from aa.mirror.memory import InFlightBytes, MemoryBudget
from aa.mirror.pending import Batch, Pending, TopicsFailed
from aa.mirror.restamp import fetched_bytes
from aa.mirror.settle import Settler, syncs_failed
from aa.mirror.target import Target

COMMIT_ON_FAILURE_S = 10.0
"""How long a run that fails while settling tries to commit what it settled before."""


class Committer:
    """Owns the bounded queue between the route and commit stages (the flow's backpressure)
    and the settled offsets not yet durable."""

    def __init__(self, ctx: StageContext, settler: Settler, target: Target) -> None:
        self.ctx = ctx
        self.settler = settler
        self.target = target
        self.queue: asyncio.Queue[Pending | None] = asyncio.Queue(ctx.settings.max_inflight_batches)
        budget = MemoryBudget.of(ctx.settings)
        self.in_flight = InFlightBytes(budget.in_flight_bytes)
        """Record bytes taken and not yet settled: bounded too, not only their count."""
        self._fetch_bytes = budget.fetch_max_bytes
        """The most a fetch brings (one whole source batch per partition aside)."""
        self.ready: dict[TopicPartition, int] = {}
        """Settled source offsets not yet made durable."""
        self.settled: dict[TopicPartition, int] = {}
        """Per partition, the offset after its last settled copy (a failed topic copied past
        its refused record runs again: :meth:`aa.mirror.failures.TopicFailures.recovered`)."""
        self.task: asyncio.Task[None] | None = None
        """The running :meth:`loop` (set by the flow), watched by :meth:`drain`."""
        self._waiting: asyncio.Timeout | None = None
        """The loop's wait for its next batch, cut short when an offset sync fails."""
        self._last_commit = time.monotonic()
        """When :meth:`commit` last ran: the next one while copying waits ``commit_interval_s``
        after it (a commit per batch was ~5% of a mesh flow's CPU at 5,000 records/s)."""
        if ctx.clients.syncs is not None:
            ctx.clients.syncs.on_failure = self._sync_failed

    async def room_for_a_fetch(self) -> None:
        """Wait, before the flow takes its next fetch from the consumer, until the in-flight
        share has room for a whole one: a fetch taken leaves the fetched-data share, and
        waiting for room with it in hand would hold it beside both shares (its next request is
        in flight by then). Not taken, it stays in the fetched-data share, and aiokafka sends
        no request for partitions holding unread data."""
        await self.in_flight.room(self._fetch_bytes)

    async def reserve(self, batch: Batch) -> int:
        """Hold a fetched batch's bytes in the in-flight share *before* it is routed (its
        copies into target batches are made under the share, not past it): waits while the
        batches before it hold the share. Returns what was held, for :meth:`admit`."""
        n = sum(fetched_bytes(records) for records in batch.values())
        if n:
            await self.in_flight.reserve(n)
        return n

    async def admit(self, pending: Pending, held: int) -> None:
        """Queue a routed batch (``held``: what :meth:`reserve` held for it, released once it
        settles) once the queue has room for it in count."""
        pending.held_bytes = held
        await self.queue.put(pending)

    async def unreserve(self, held: int) -> None:
        """Give back what :meth:`reserve` held for a batch that queued nothing."""
        if held:
            await self.in_flight.release(held)

    async def loop(self) -> None:
        """Settle and commit until the ``None`` that ends the queue: ready offsets are
        committed at most once per ``commit_interval_s``, and at the latest that long after
        the last batch settled (an idle flow's commit waits for no batch). While it waits, it
        writes the offset-sync runs that fall due (the tail of a run, copied while the flow
        idles)."""
        self._last_commit = time.monotonic()
        while True:
            syncs_failed(self.ctx)  # an idle flow stops too: no batch may come to settle
            try:
                async with asyncio.timeout(self._until_due()) as self._waiting:
                    pending = await self.queue.get()
            except TimeoutError:
                await self._flush_syncs(due_only=True)
                if self.ready and self._commit_due():
                    await self.commit(final=False)
                continue
            finally:
                self._waiting = None
            try:
                if pending is None:
                    await self.commit(final=True)
                    return
                try:
                    await self.target.patiently(self.settler.settle(pending), "copies")
                except TopicsFailed as failed:
                    topics = {tp.topic for tp in failed.refusals}
                    settled = {tp: o for tp, o in pending.offsets.items() if tp.topic not in topics}
                    await self._commit_before_failing(settled, syncs=True)
                    raise
                except FlowError:
                    await self._commit_before_failing({}, syncs=False)
                    raise
                await self.in_flight.release(pending.held_bytes)
                self.ready.update(pending.offsets)
                self.settled.update(pending.offsets)
                if self._commit_due():
                    await self.commit(final=False)
            finally:
                self.queue.task_done()

    async def _commit_before_failing(
        self, settled: dict[TopicPartition, int], *, syncs: bool
    ) -> None:
        """Before the run ends on an error while settling (a refused batch, topics the target
        refused for good): at least once, commit what was settled before it (and ``settled``,
        the other topics' part of the failed batch), so the next run does not copy it again
        — with commits once per interval, up to an interval's worth at rest. Exactly-once: the
        transaction aborts and the next run resumes from its last commit. The offset syncs
        first only when the target answers (``syncs``: it refused topics, it is not what
        failed); a commit ahead of them makes translation behind, never ahead. Each step is
        bounded by :data:`COMMIT_ON_FAILURE_S`; one that fails is only logged: the error is
        what ends the run."""
        if self.ctx.delivery.transactional:
            return
        ready, self.ready = {**self.ready, **settled}, {}
        if not ready:
            return
        try:
            if syncs:
                async with asyncio.timeout(COMMIT_ON_FAILURE_S):
                    await self._flush_syncs(due_only=False)
            async with asyncio.timeout(COMMIT_ON_FAILURE_S):
                await self.ctx.delivery.commit(ready, final=True)
        except (KafkaError, FlowError, TimeoutError) as exc:
            self.ctx.clients.log.warning("commit_before_failure_failed", error=repr(exc))

    def _sync_failed(self) -> None:
        """An offset sync failed: end the loop's wait, so the failure stops the flow even when
        no batch comes to settle."""
        if self._waiting is not None:
            self._waiting.reschedule(asyncio.get_running_loop().time())

    def _commit_due(self) -> bool:
        return time.monotonic() - self._last_commit >= self.ctx.settings.commit_interval_s

    def _until_due(self) -> float | None:
        """Seconds until an open offset-sync run or the commit of ready offsets falls due
        (``None``: nothing is waiting)."""
        waits = []
        if self.ready:
            waits.append(self._last_commit + self.ctx.settings.commit_interval_s - time.monotonic())
        syncs = self.ctx.clients.syncs
        due = syncs.next_due() if syncs is not None else None
        if syncs is not None and due is not None:
            waits.append(due - syncs.clock())
        return max(0.0, min(waits)) if waits else None

    async def _flush_syncs(self, *, due_only: bool) -> None:
        if self.ctx.clients.syncs is not None:
            flushed = self.ctx.clients.syncs.flush(due_only=due_only)
            await self.target.patiently(flushed, "offset syncs")

    async def commit(self, *, final: bool) -> None:
        """Flush offset-sync runs (all of them when ``final``: translation up to the commit, in
        exactly-once mode inside the transaction; while copying, those due: at most one sync
        per partition per interval, never one per commit), then hand the ready offsets to the
        delivery. Syncs behind the commit make translation behind, never ahead."""
        await self._flush_syncs(due_only=not final)
        self._last_commit = time.monotonic()
        ready, self.ready = self.ready, {}
        if not await self.ctx.delivery.commit(ready, final=final):
            self.ready = {**ready, **self.ready}  # kept for a later commit
        elif self.ctx.delivery.transactional:
            self.settler.publish_counts()  # exactly-once: copies count once committed

    async def drain(self) -> None:
        """Wait until every queued batch is settled, then commit (before a rebalance, a
        transaction commit, a stop). Returns early, committing nothing, when the commit loop
        died: its error stops the flow."""
        if await self.all_settled():
            await self.commit(final=True)

    async def all_settled(self) -> bool:
        """Wait until every queued batch is settled (true), or the commit loop died (false:
        its error stops the flow)."""
        join = asyncio.ensure_future(self.queue.join())
        waiters: set[asyncio.Future[Any]] = {join}
        if self.task is not None:
            waiters.add(self.task)
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not join.done():
            join.cancel()
            return False
        return True
