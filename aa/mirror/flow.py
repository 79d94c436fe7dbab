"""One flow A→B: consume from A, route each record, produce to B, and commit A's offsets only
after B acknowledged every record before them (at-least-once), or in one transaction on B
with the copies (exactly-once; see :mod:`aa.mirror.delivery`).

The flow wires a pipeline of small parts, each with one job (docs/mirror.md, "Where the code
is"): :mod:`~aa.mirror.fetch` (batches from the source; revokes), :mod:`~aa.mirror.route`
(routing and batching per target partition: the per-record hot path), :mod:`~aa.mirror.target`
(produce, waiting out a silent target), :mod:`~aa.mirror.settle` (refusals, offset syncs,
counts), :mod:`~aa.mirror.commit` (the bounded queue — the backpressure — and commits through
the delivery strategy) and :mod:`~aa.mirror.placement` (target topics, partitions, limits,
periodic topic sync). A record the target refuses stops the flow before its offset is
committed, or is dead-lettered when ``on_error`` says so; nothing is skipped silently.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from functools import partial

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin, TopicRefused
from aa.coordinators import CoordinatorBlocked, unless_blocked, waited
from aa.kafka import fetched, switch
from aa.kafka.producers import never_expire
from aa.lifecycle import started
from aa.logs import get_logger
from aa.mirror import restamp
from aa.mirror.commit import Committer
from aa.mirror.context import StageContext
from aa.mirror.control import Applied, FlowControl
from aa.mirror.delivery import AtLeastOnce, Delivery, FlowClients
from aa.mirror.eos import ExactlyOnce
from aa.mirror.errors import FlowError as FlowError  # re-exported: callers import it here
from aa.mirror.errors import TransactionBroken, first_error, not_authorized
from aa.mirror.expiry import ExpiryCheck
from aa.mirror.failures import TopicFailures
from aa.mirror.fetch import Fetcher, RevokeListener, take_partitions
from aa.mirror.memory import MIN_PARTITION_FETCH, MemoryBudget, PartitionShare
from aa.mirror.pending import Batch, Pending, TopicsFailed
from aa.mirror.placement import Placement
from aa.mirror.refusals import DEAD_LETTER_REASON as DEAD_LETTER_REASON  # re-exported
from aa.mirror.route import Forwarder, known_schemas
from aa.mirror.settings import FlowSettings
from aa.mirror.settle import Settler
from aa.mirror.target import LANES, Target, stop_target
from aa.mirror.topics import TopicSync
from aa.observe.metrics import Metrics
from aa.offsets.writer import OffsetSyncWriter, ensure_internal_topic
from aa.protocols import Router
from aa.schemas.translator import SchemaTranslator

REBALANCE_TIMEOUT_MS = 300_000
"""How long the group waits for a member's revoke (drain and commit) before evicting it: the
Java client's max.poll.interval.ms. aiokafka defaults to the session timeout (10 s), which
evicted a member whose drain waited on a slow target, so its commit was refused."""


def delivery_for(settings: FlowSettings) -> Delivery:
    if settings.delivery == "exactly-once":
        return ExactlyOnce(settings)
    return AtLeastOnce(settings)


class MirrorFlow:
    """Copies the records of one ordered DC pair. ``run`` returns when ``stop`` is set."""

    def __init__(
        self,
        settings: FlowSettings,
        router: Router,
        metrics: Metrics,
        delivery: Delivery | None = None,
    ) -> None:
        self.settings = settings
        self.delivery = delivery or delivery_for(settings)
        self.router = router
        self.metrics = metrics
        self.log = get_logger("aa.mirror", flow=settings.name)
        self.syncs: OffsetSyncWriter | None = None
        self.target_admin: ClusterAdmin | None = None
        self._producer: AIOKafkaProducer | None = None
        self._skipper: switch.BatchSkipper | None = None
        self._lean: switch.LeanRecords | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._placement: Placement | None = None
        self._settler: Settler | None = None
        self._committer: Committer | None = None
        self._fetcher: Fetcher | None = None
        self._expiry: ExpiryCheck | None = None
        # pauses, failed topics, the rate limit: the supervisor's (load_control), kept across runs
        self.control = FlowControl(settings.name, settings.max_bytes_per_s)
        self.load_control: Callable[[], Awaitable[FlowControl]] | None = None
        self._applied = Applied()
        self._schemas: SchemaTranslator | None = None

    def make_target(self, ctx: StageContext) -> Target:  # a seam for tests that slow it down
        return Target(ctx)

    async def run(self, stop: asyncio.Event) -> None:
        """Copy until ``stop``; raises what stopped it (:class:`FlowError`: aa says why)."""
        try:
            await self._run(stop)
        except TopicsFailed as exc:  # its topics fail; the run restarts without them
            self._failures.refused(self.control, exc)
            raise
        except TopicRefused as exc:
            raise FlowError(
                f"{self.settings.name}: {exc}; no restart gets past that, so the flow stops: "
                "leave its source topic out of this flow (topics.exclude), or rename it",
                kind="topic-refused",
                retriable=False,
            ) from exc
        except CoordinatorBlocked as exc:  # the flow's group lives in the source, its
            # transactions in the target
            dc = self.settings.source if exc.kind == "group" else self.settings.target
            raise FlowError(
                f"{self.settings.name}: {dc} has no {exc.kind} coordinator: {exc}; the flow "
                "retries until then",
                kind="coordinator-unavailable",
                retriable=True,
            ) from exc
        except Exception as exc:
            if (denied := self._refused_by_acl(exc)) is None:
                raise
            raise denied from exc

    def _refused_by_acl(self, exc: Exception) -> FlowError | None:
        """What stopped the flow when ``exc`` only shows it second: an ACL's refusal one
        client raised as it is, or a refusal of the offset syncs, written in the background,
        which the flow meets later as another error (a sync that failed; in a transaction,
        every later send refused with ``IllegalOperation``): an ACL, or a fence."""
        if isinstance(exc, FlowError) and exc.kind in ("not-authorized", "fenced"):
            return None  # said already, by the stage that knew it
        syncs = self.syncs.last_error if self.syncs is not None else None
        return (
            not_authorized(exc, self.settings)
            or not_authorized(syncs, self.settings, "target")
            or (self.delivery.refusal(syncs) if syncs is not None else None)
        )

    async def _run(self, stop: asyncio.Event) -> None:
        s = self.settings
        async with contextlib.AsyncExitStack() as stack:
            source_admin = await stack.enter_async_context(
                ClusterAdmin(s.source, **s.source_client)
            )
            target_admin = await stack.enter_async_context(
                ClusterAdmin(s.target, replication_factor=s.replication_factor, **s.target_client)
            )
            dead_letters = s.dead_letter_topic if s.on_error == "dead-letter" else None
            topics = TopicSync(
                source_admin, target_admin, self.router, s.config_exclude,
                dead_letter_topic=dead_letters,
            )  # fmt: skip
            if s.topic_sync:
                await topics.sync()
            if self.load_control is not None:  # stored pauses hold from the first fetch
                self.control = await self.load_control()
            self.target_admin = target_admin
            producer = self._producer = await self._producer_started(stack)
            lanes = tuple(
                [await self._producer_started(stack) for _ in range(LANES - 1)]
                if not self.delivery.transactional
                else ()
            )
            if s.offset_syncs:
                parts = await ensure_internal_topic(target_admin, s.sync_topic)
                self.syncs = OffsetSyncWriter(producer, s.sync_topic, partitions=parts)
            group = self.delivery.group_id()
            self._skipper = None
            fetched.install()
            if not self.router.forwards_mirrored():
                self._skipper = switch.BatchSkipper(s.source)
            budget = MemoryBudget.of(s)
            # lean records, told apart by who wrote their batch (mirror or application)
            lean = self._lean = self._skipper or switch.LeanRecords(s.source)
            # local batches re-encoded whole: see restamp
            lean.raw = restamp.enabled()
            consumer = self._consumer = AIOKafkaConsumer(
                **s.source_client,
                # lean records, and mirror-written batches skipped: see batches
                key_deserializer=lean,
                group_id=group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
                fetch_max_bytes=budget.fetch_max_bytes,
                max_partition_fetch_bytes=MIN_PARTITION_FETCH,  # until assigned: PartitionShare
                fetch_min_bytes=min(s.fetch_min_bytes, MIN_PARTITION_FETCH),  # and this
                fetch_max_wait_ms=s.fetch_max_wait_ms,
                metadata_max_age_ms=int(s.topic_sync_interval_s * 1000),
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            )
            await started(consumer)
            stack.push_async_callback(consumer.stop)
            clients = FlowClients(
                producer, consumer, target_admin, self.syncs, self.log, source_admin, lanes
            )
            await self.delivery.start(clients)
            self._schemas = None
            if s.schemas is not None:  # schema ids translated: aa.schemas
                translator = SchemaTranslator(s, target_admin, self.metrics, self.log)
                self._schemas = await stack.enter_async_context(translator)
            ctx = StageContext(s, self.router, self.metrics, self.delivery, clients, self._schemas)
            self._wire(ctx, topics)
            listener = RevokeListener(self) if group is not None else None
            take_partitions(consumer, ctx, self.router.subscription(), listener)
            self.metrics.up.labels(**s.labels).set(1)
            self.log.info(
                "flow_started",
                group=group,
                delivery=s.delivery,
                pattern=self.router.subscription(),
                batch_restamp=lean.raw,
            )
            try:
                async with asyncio.TaskGroup() as tg:
                    assert self._committer is not None
                    self._committer.task = tg.create_task(self._committer.loop())
                    tg.create_task(self.delivery.watch(stop))
                    if group is not None:
                        blocked = partial(source_admin.coordinator_blocked, "group")
                        tg.create_task(unless_blocked(consumer.assignment, blocked, stop))
                    if s.topic_sync:
                        assert self._placement is not None
                        tg.create_task(self._placement.sync_loop(stop, self.metrics))
                    await self._fetch_loop(stop)
                    await self._committer.queue.put(None)
            except BaseExceptionGroup as failed:
                if self._settler is not None:
                    self._settler.discard_counts()
                await self.delivery.abort()
                raise first_error(failed) from None
            finally:
                self.metrics.up.labels(**s.labels).set(0)
        self.log.info("flow_stopped", copied=self.copied_total)

    async def _producer_started(self, stack: contextlib.AsyncExitStack) -> AIOKafkaProducer:
        """A producer to the target, started; stopped when the run ends (dropping what it
        holds if the flow failed)."""
        s = self.settings
        producer = AIOKafkaProducer(
            **s.target_client,
            acks="all",
            enable_idempotence=True,
            linger_ms=s.linger_ms,
            max_batch_size=s.batch_size,
            compression_type=s.producer_compression,
            request_timeout_ms=s.request_timeout_ms,
            **self.delivery.producer_options(),
        )
        start = started(producer)
        if self.delivery.transactional:  # waits for its producer id, from a transaction
            # coordinator, which a target that cannot host one would never answer with
            assert self.target_admin is not None
            start = waited(start, partial(self.target_admin.coordinator_blocked, "transaction"))
        await start
        never_expire(producer)
        stack.push_async_exit(lambda et, *_: stop_target(producer, s.name, failed=et is not None))
        return producer

    def _wire(self, ctx: StageContext, topics: TopicSync) -> None:
        """The stages of this run, each given the run's context (clients, delivery, settings)."""
        target = self.make_target(ctx)
        lean = self._lean or switch.LeanRecords()
        target.source_codecs = lean.codecs  # tuning.compression: source
        s = ctx.settings
        share = PartitionShare(MemoryBudget.of(s), ctx.clients.consumer, s.fetch_min_bytes)
        self._placement = Placement(ctx, topics)
        fetch = self._fetcher = Fetcher(ctx, self._skipper, share)
        self._forwarder = Forwarder(ctx, self._placement, target, fetch.set_lag, lean.believed)
        self._settler = Settler(ctx, target)
        self._committer = Committer(ctx, self._settler, target)
        self._expiry = ExpiryCheck(ctx)
        self._failures = TopicFailures(ctx, self._placement)

    async def _fetch_loop(self, stop: asyncio.Event) -> None:
        """Room → fetch → admit → reserve → route → queue, one batch at a time, until ``stop``."""
        fetch, committer, delivery = self._fetcher, self._committer, self.delivery
        assert fetch is not None
        assert committer is not None
        while not stop.is_set():
            if self.control.failures:  # copied past where they failed: running again
                self._failures.recovered(self.control, committer.settled)
                await self._failures.ask_before_retry(self.control)
            self._apply_control()  # paused partitions fetch nothing
            await committer.room_for_a_fetch()  # what it takes is held in the share: memory.py
            generation, batch = await fetch.next_batch()
            spent = 0
            self._applied.hold_back(self.control, self._consumer, batch)
            if batch and self._expiry is not None:
                # not under ``routing``: the group's committed offsets it may ask for wait for
                # a rebalance in progress, and the rebalance waits for ``routing``
                await self._expiry.check(batch)
            if (
                batch
                and self._schemas is not None
                and not await known_schemas(self._schemas, batch, stop)
            ):
                break  # stopped while a schema registry was away: not routed, not committed
            async with fetch.routing:
                if not fetch.current(generation, batch):
                    continue
                if batch:
                    batch = delivery.admit(batch)
                # the share first, then the copies: nothing routed past it (memory.py)
                held = spent = await committer.reserve(batch)
                try:
                    pending = await self._route(batch)
                except TransactionBroken:  # a copy the target refused broke it: once settled,
                    await committer.all_settled()  # the commit loop stops the run, saying why
                    raise
                if fetch.damage is not None:  # stop before a damaged source batch
                    pending = pending or Pending()
                    pending.malformed = pending.malformed or fetch.damage
                if pending is None:
                    await committer.unreserve(held)
                else:
                    if pending.failed:
                        self._failures.failed(self.control, pending)
                    await committer.admit(pending, held)
                    fetch.queued(pending.offsets)
                    if pending.malformed is not None:
                        await committer.drain()
                        raise pending.malformed
            if delivery.commit_due():  # idle or not: commit what is due
                await self.drain()
            await self.control.throttle.spend(spent, stop)  # the rate limit: docs/operations.md

    def _apply_control(self) -> None:
        """Pauses and failed topics to the consumer; their states to ``aa_topic_state``."""
        if self._consumer is not None and self._applied.apply(self.control, self._consumer):
            self._failures.show_states(self.control, {tp.topic for tp in self._applied.assignment})

    async def _route(self, batch: Batch) -> Pending | None:
        """The pending of an admitted batch, with the positions of the partitions it holds no
        record of that moved past transaction markers (per partition: one busy partition
        never holds another's back); ``None`` when there is neither."""
        assert self._fetcher is not None
        moved = await self._fetcher.moved_positions(batch)
        if not batch and not moved:
            return None
        await self.delivery.before_forward()
        pending = await self._forwarder.forward(batch) if batch else Pending()
        pending.offsets.update(moved)  # partitions the batch holds no record of
        return pending

    def on_assigned(self) -> None:
        """Partitions were assigned (aiokafka's rebalance listener): the per-partition fetch
        size follows, before the first fetch of the new assignment."""
        self._apply_control()  # before the first fetch of the new assignment
        if self._fetcher is not None and self._fetcher.share is not None:
            self._fetcher.share.follow()
        if self._expiry is not None:
            self._expiry.assigned()

    async def on_revoke(self, revoked: set[TopicPartition]) -> None:
        """Partitions are being revoked (from aiokafka's rebalance listener): see
        :meth:`aa.mirror.fetch.Fetcher.revoke`."""
        assert self._fetcher is not None
        await self._fetcher.revoke(revoked, self.drain)

    async def drain(self) -> None:
        """Wait until every fetched batch is settled and committed (before a rebalance, stop)."""
        if self._committer is not None:
            await self._committer.drain()

    def partitions(self) -> dict[TopicPartition, int | None]:
        """The source partitions this run holds: :meth:`aa.mirror.fetch.Fetcher.behind`."""
        return self._fetcher.behind() if self._fetcher is not None else {}

    @property
    def copied_total(self) -> int:
        return self._settler.copied_total if self._settler is not None else 0

    @property
    def topic_sync_error(self) -> str | None:
        """The last periodic topic sync's error (``None`` once one succeeds); in /healthz."""
        return self._placement.topic_sync_error if self._placement is not None else None

    @property
    def producer(self) -> AIOKafkaProducer:
        assert self._producer is not None
        return self._producer

    @property
    def consumer(self) -> AIOKafkaConsumer:
        assert self._consumer is not None
        return self._consumer
