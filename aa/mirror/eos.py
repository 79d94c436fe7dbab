"""Exactly-once delivery: the copies of a run of fetched batches, their offset syncs and the
source offsets they advance are written to the target in one Kafka transaction.

The source offsets live in a compacted topic on the target (``aa.offsets.<source>.internal``,
key ``topic/partition``), because aiokafka's ``send_offsets_to_transaction`` can only commit to
a group on the producer's own cluster. On start the flow first initialises its transactional
producer (which fences any older instance with the same transactional id and aborts its open
transaction), then reads the stored offsets with ``read_committed`` and resumes from them; the
source consumer has no group, so every partition is assigned to this one process. Consumers of
the target read with ``isolation_level="read_committed"``.

Each stored offset carries the source topic's id. A topic deleted and created again under the
same name has a new id and offsets from 0 again: positions stored for the old one are dropped
at start (``source_topic_recreated``), and a running flow that sees the id change (checked every
topic-sync interval, :class:`aa.mirror.incarnations.Incarnations`) aborts its transaction and
restarts, so none of the new records is skipped as "already copied".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import orjson
from aiokafka import TopicPartition
from aiokafka.errors import InvalidProducerEpoch, KafkaError, ProducerFenced, UnknownError

from aa.kafka.producers import transaction_error
from aa.mirror.delivery import FlowClients
from aa.mirror.errors import FlowError, not_authorized
from aa.mirror.incarnations import Incarnations
from aa.mirror.pending import Batch
from aa.mirror.positions import OFFSETS_TOPIC_CONFIGS, StoredOffsets, fence, offset_key
from aa.mirror.restamp import from_offset, next_offset
from aa.mirror.settings import FlowSettings
from aa.offsets.groups import group_offsets
from aa.offsets.writer import ensure_internal_topic


def is_fenced(exc: BaseException) -> bool:
    """Whether a transactional producer's error means another instance fenced it.

    aiokafka raises ``ProducerFenced`` for ``INVALID_PRODUCER_EPOCH``; Kafka 4 brokers answer
    ``EndTxn`` with ``PRODUCER_FENCED`` (90), a code aiokafka does not know: its sender task
    dies on an ``UnknownError`` and every later call fails with a ``KafkaError`` caused by it.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ProducerFenced | InvalidProducerEpoch):
            return True
        if isinstance(seen, UnknownError) and seen is not exc:
            return True  # the sender task died on a transaction response (see above)
        seen = seen.__cause__
    return False


class ExactlyOnce:
    """One transactional producer per flow; commits every ``commit_interval_s``.

    A transaction commits only after every write in it (copies, offset syncs, the source
    offsets) was acknowledged; any failure aborts it, so ``read_committed`` consumers never wait
    for it to time out. A fenced producer stops the flow for good (not retriable), so that two
    processes of one flow do not fence each other in turn forever.
    """

    transactional = True

    def __init__(self, settings: FlowSettings) -> None:
        self._settings = settings
        self._next: dict[TopicPartition, int] = {}
        """Per partition, the next offset to copy: records before it were copied (stored, or
        admitted into the open transaction); :meth:`admit` drops them."""
        self._stored: dict[TopicPartition, int] = {}
        """Per partition, the position the positions topic holds (read at start, then each
        committed transaction's)."""
        self._open = False
        self._dirty = False
        self._last = time.monotonic()
        self._since: float | None = None
        """When the open transaction's first write was made (``None``: none yet): the target
        aborts a transaction open longer than its timeout (see :meth:`fenced`)."""
        self._clients: FlowClients | None = None
        self._ids: Incarnations | None = None
        """The source topics' ids: the incarnation the positions in ``_next`` belong to."""
        self.transactions = 0

    def group_id(self) -> str | None:
        return None

    def producer_options(self) -> dict[str, Any]:
        return {
            "transactional_id": self._settings.transactional_id,
            "transaction_timeout_ms": self._settings.transaction_timeout_ms,
        }

    @property
    def clients(self) -> FlowClients:
        if self._clients is None:
            raise AssertionError("exactly-once: used before start")
        return self._clients

    async def start(self, clients: FlowClients) -> None:
        s = self._settings
        self._clients = clients
        await ensure_internal_topic(
            clients.target_admin, s.eos_offsets_topic, OFFSETS_TOPIC_CONFIGS
        )
        # Waits for the producer id: fences older instances and ends their open transaction,
        # so the offsets read below are final.
        await self._guard(clients.producer.begin_transaction())
        self._open, self._dirty = True, False
        stored, stored_ids = await self._stored_after_fencing()
        ids = self._ids = Incarnations(s, clients.source_admin)
        if clients.syncs is not None:
            clients.syncs.topic_ids = ids.known
        stale = await ids.recreated(stored_ids)
        for topic, old in stale.items():
            dropped = {tp: o for tp, o in stored.items() if tp.topic == topic}
            for tp in dropped:
                del stored[tp]
            clients.log.warning(
                "source_topic_recreated",
                topic=topic,
                stored_id=old,
                topic_id=ids.id(topic),
                partitions=len(dropped),
                detail=(
                    f"{topic} in {s.source} was deleted and created again since {s.name} "
                    f"stored its positions; its offsets start again, so it is copied from "
                    "its beginning"
                ),
            )
        # A flow switched from at-least-once starts where its source group left off, not at the
        # beginning: the group only ever commits acknowledged copies, so the larger of the two
        # is never ahead of the copy.
        group = await group_offsets(s.source_client, s.group_id)
        if s.offset_syncs and not stored:  # a new flow, or its positions topic was lost
            stored.update(await self._lost(group, set(stale)))
        self._next = {tp: max(stored.get(tp, 0), group.get(tp, 0)) for tp in {*stored, *group}}
        self._stored = dict(self._next)
        clients.log.info(
            "eos_resumed",
            partitions=len(self._next),
            topic=s.eos_offsets_topic,
            from_group=sum(1 for tp, o in group.items() if o > stored.get(tp, -1)),
        )

    async def _stored_after_fencing(
        self,
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, str | None]]:
        """The stored positions, read once no other transactional id can still commit any of
        this run's partitions. A partition set's run fences, besides its own id (its producer
        did), the ids that stored its partitions' positions last: a process of the flow
        started with another ``exactly_once.partition_sets`` (KIP-618 fences the tasks of the
        old count alike); then it reads them again, so what it reads is final."""
        s = self._settings
        async with StoredOffsets(s) as read:
            stored = await read.refresh()
            mine = set(s.assigned)
            former = {w for tp, w in read.writers.items() if tp in mine}
            former.discard(s.transactional_id)
            if s.partition_set is not None and former:
                for transactional_id in sorted(former):
                    await fence(s, transactional_id)
                    self.clients.log.warning(
                        "eos_former_writer_fenced",
                        transactional_id=transactional_id,
                        detail=f"{transactional_id} stored positions of partitions {s.name} "
                        f"copies now in {s.transactional_id}: fenced, so it commits none",
                    )
                stored = await read.refresh()
            return stored, dict(read.ids)

    async def _lost(
        self, group: Mapping[TopicPartition, int], recreated: set[str]
    ) -> dict[TopicPartition, int]:
        """The positions the flow's committed offset syncs know (:mod:`aa.offsets.resume`),
        for a store that holds none: deleted or emptied. Called only then (a store that holds
        positions is trusted as it is), so a start with positions does not read the sync
        topic. Syncs of ``recreated`` topics, or written for another incarnation of their
        topic, are not used; syncs written without a topic id (older aa) are."""
        s, clients, ids = self._settings, self.clients, self._ids
        assert ids is not None
        found = await ids.synced_positions(
            clients.consumer, group, require_id=False, recreated=recreated
        )
        if found:
            clients.log.warning(
                "eos_positions_from_syncs",
                topic=s.eos_offsets_topic,
                partitions=len(found),
                detail=(
                    f"{s.eos_offsets_topic} in {s.target} holds no position for "
                    f"{len(found)} partition(s) that {s.name} copied (deleted or emptied?); "
                    f"they resume where the offset syncs in {s.sync_topic}, written in the "
                    "same transactions, say the copy ended, not from the beginning"
                ),
            )
        return found

    async def resume_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        return {tp: self._next.get(tp) for tp in tps}

    def rewind(self, tp: TopicPartition, offset: int) -> None:
        """Records of ``tp`` from ``offset`` on were fetched but not copied (its topic
        failed): they are admitted again when fetched again."""
        if self._next.get(tp, offset) > offset:
            self._next[tp] = offset

    async def regained(self, tps: set[TopicPartition]) -> None:
        return None  # no group: every partition is this process's, positions in the target

    def admit(self, batch: Batch) -> Batch:
        out: Batch = {}
        for tp, records in batch.items():
            nxt = self._next.get(tp)
            if nxt is not None and records[0].offset < nxt:
                records = from_offset(records, nxt)
                if not records:
                    # aiokafka resets positions when its assignment changes: skip ahead.
                    self.clients.consumer.seek(tp, nxt)
                    continue
            out[tp] = records
            self._next[tp] = next_offset(records)
        return out

    async def before_forward(self) -> None:
        if not self._open:
            raise AssertionError("exactly-once: forwarding outside a transaction")
        self._dirty = True
        self._since = self._since or time.monotonic()

    def commit_due(self) -> bool:
        """A transaction is due: the flow drains (settles everything in flight), which
        commits it (``commit(final=True)``)."""
        return self._dirty and time.monotonic() - self._last >= self._settings.commit_interval_s

    async def commit(self, ready: Mapping[TopicPartition, int], *, final: bool) -> bool:
        if not final or not self._open:
            return False
        ready = self._not_behind(ready)
        if not self._dirty and not ready:
            return True
        ids = self._ids
        assert ids is not None  # started
        await ids.learn({tp.topic for tp in ready})
        clients = self.clients
        producer = clients.producer
        topic, txn = self._settings.eos_offsets_topic, self._settings.transactional_id
        sends = []
        ts = int(time.time() * 1000)
        self._since = self._since or time.monotonic()
        for tp, offset in ready.items():
            value = orjson.dumps(
                {"offset": offset, "ts": ts, "topic_id": ids.id(tp.topic), "txn": txn}
            )
            sends.append(await self._guard(producer.send(topic, value, offset_key(tp))))
        # Every write of the transaction must be acknowledged before it commits: aiokafka
        # commits a transaction even when one of its sends failed.
        results = await asyncio.gather(*sends, return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            raise self._refused(f"the source offsets to {topic}", failed)
        await self._guard(producer.flush())
        if clients.syncs is not None and clients.syncs.failed:
            raise FlowError(
                f"{self._settings.name}: writing offset syncs to {clients.syncs.topic} in "
                f"{self._settings.target} failed inside a transaction; it is aborted",
                kind="offset-sync",
                retriable=True,
            )
        await self._guard(producer.commit_transaction())
        self._stored.update(ready)
        self.transactions += 1
        self._last, self._since = time.monotonic(), None
        await self._guard(producer.begin_transaction())
        self._dirty = False
        return True  # the caller counts the copies: committed now

    def _not_behind(self, ready: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The positions the transaction stores: exactly what it copied, never less than stored.

        The source consumer has no group: after a restart it fetches from the earliest offset
        and :meth:`admit` drops what was copied. Until a partition's first fetch is dropped,
        its position is behind the stored offset; a fetch that returned only copied records
        of other partitions made the flow commit those positions ("moved past markers"), and
        a kill in that window copied the partition again. Such positions are left out.

        A position below what :meth:`admit` let through is kept: the route stage stopped at a
        record the target refuses (``on_error: fail``), and the copies before it commit in
        this transaction. Stored at the end of the fetch instead, or left out (as it once
        was), the copies commit without their position and a restart copies them again. The
        records from there on were not copied: they are admitted again if fetched again."""
        out = {}
        for tp, offset in ready.items():
            if offset >= self._stored.get(tp, 0):
                out[tp] = offset
                self._next[tp] = offset
        return out

    async def watch(self, stop: asyncio.Event) -> None:
        if self._ids is not None:
            await self._ids.watch(stop)

    def refusal(self, exc: BaseException) -> FlowError | None:
        return self.fenced(exc) if is_fenced(exc) else None

    async def abort(self) -> None:
        """End the open transaction after a failure, so readers of the target are not held up
        until it times out (a fenced producer cannot: its successor aborted it already)."""
        if not self._open or self._clients is None:
            return
        self._open = False
        log = self._clients.log
        transaction_error(self._clients.producer)  # said by the flow already (aa.kafka.producers)
        try:
            await asyncio.wait_for(self._clients.producer.abort_transaction(), 30)
        except (KafkaError, AssertionError, TimeoutError) as exc:
            # aiokafka asserts on an abort from a fatal state; the broker then aborts the
            # transaction itself after transaction_timeout_ms.
            log.warning("eos_abort_failed", error=repr(exc))
        else:
            log.info("eos_aborted")

    def _refused(self, what: str, exc: BaseException) -> FlowError:
        if is_fenced(exc):
            return self.fenced(exc)
        if (denied := not_authorized(exc, self._settings, "target")) is not None:
            return denied
        retriable = bool(getattr(exc, "retriable", False))
        return FlowError(
            f"{self._settings.name}: {self._settings.target} refused {what} ({exc!r}); the "
            "transaction is aborted"
            + ("" if retriable else ", and the flow stops: a retry would be refused again"),
            kind="transaction",
            retriable=retriable,
        )

    def fenced(self, exc: BaseException) -> FlowError:
        """The target bumped the producer's epoch: another process of the flow took over, or
        the target aborted a transaction open longer than ``transaction_timeout_ms`` (the
        flow or the target stalled, or was away, that long) — which answers the same. Only the
        transaction is lost then: the flow restarts. A process that took over fences a younger
        transaction, and is not fenced in turn (this one stops for good)."""
        self._open = False
        s = self._settings
        age = time.monotonic() - self._since if self._since is not None else 0.0
        if age * 1000 >= s.transaction_timeout_ms:
            return FlowError(
                f"{s.name}: the transaction timed out: {s.target} aborted it, open {age:.1f} s, "
                f"longer than its timeout ({s.transaction_timeout_ms / 1000:g} s): the flow or the "
                "target stalled or was away; nothing of it was committed, so the flow restarts "
                f"from its last committed positions ({exc!r})",
                kind="transaction-timed-out",
                retriable=True,
            )
        if s.partition_set is not None:  # the set moved: this process rejoins the group
            return FlowError(
                f"{s.name}: another process took over partition set {s.partition_set} of "
                f"{s.partition_sets} (transactional id {s.transactional_id}) and fenced this "
                "one; this process rejoins the flow's group and copies the sets it is given",
                kind="fenced",
                retriable=True,
            )
        return FlowError(
            f"{self._settings.name}: another process took over this exactly-once flow "
            f"(transactional id {self._settings.transactional_id}) and fenced this one; this "
            "one stops for good so that the two do not fence each other in turn; run one "
            "process per flow in exactly-once mode",
            kind="fenced",
            retriable=False,
        )

    async def _guard(self, call: Any) -> Any:
        try:
            return await call
        except KafkaError as exc:
            if is_fenced(exc):
                raise self.fenced(exc) from exc
            if (denied := not_authorized(exc, self._settings, "target")) is not None:
                raise denied from exc
            raise FlowError(
                f"{self._settings.name}: transaction on {self._settings.target} failed: {exc!r}",
                kind="transaction",
                retriable=True,
            ) from exc
