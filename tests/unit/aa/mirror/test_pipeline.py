"""The flow's pipeline parts with fakes for the clients (issue 13, item 2): routing and
batching per target partition, refusals, settle/commit ordering, what is committed when a
batch fails, and a revoke whose drain fails. Pure logic: no broker."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError

from aa.kafka.records import CorruptBatch, RawBatch
from aa.kafka.switch import BatchSkipper
from aa.logs import get_logger
from aa.mirror.commit import Committer
from aa.mirror.context import StageContext
from aa.mirror.delivery import AtLeastOnce, FlowClients
from aa.mirror.errors import FlowError
from aa.mirror.fetch import Fetcher
from aa.mirror.flow import MirrorFlow
from aa.mirror.limits import TargetLimits
from aa.mirror.memory import MIB
from aa.mirror.pending import Pending
from aa.mirror.route import Forwarder
from aa.mirror.settings import FlowSettings
from aa.mirror.settle import Settler
from aa.mirror.target import Target, partition_for
from aa.observe.metrics import Metrics
from aa.protocols import Malformed, Route, Skip
from tests.helpers.kafka import eventually
from tests.helpers.mirror import stage_context

pytestmark = pytest.mark.unit

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@dataclass(frozen=True)
class Rec:
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    value: bytes | None = b"v"
    timestamp: int = 1_700_000_000_000
    headers: Sequence[tuple[str, bytes]] = ()


def recs(tp: TopicPartition, first: int, n: int, **kw: Any) -> list[Rec]:
    return [Rec(tp.topic, tp.partition, o, **kw) for o in range(first, first + n)]


def settings(**kw: Any) -> FlowSettings:
    return FlowSettings("A", "B", {"bootstrap_servers": "-"}, {"bootstrap_servers": "-"}, "g", **kw)


class Router:
    """Forwards every record with one header; ``skip``/``bad`` offsets are skipped/malformed."""

    def __init__(self, skip: set[int] = frozenset(), bad: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.skip, self.bad = skip, bad

    def target_topic(self, topic: str) -> str | None:
        return None if topic == "unrouted" else topic

    def forwards_mirrored(self) -> bool:
        return True

    def local_stamp(self, topic: str, partition: int) -> None:
        return None  # the record path only

    def route_batch(
        self, topic: str, partition: int, records: Sequence[Any], believed: Any = None
    ) -> list[Route]:
        out: list[Route] = []
        for r in records:
            if r.offset in self.skip:
                out.append(Skip("not-origin"))
            elif r.offset in self.bad:
                out.append(Malformed("aa-src unreadable"))
            else:
                out.append([("aa-origin", b"A")])
        return out


class Placement:
    def __init__(self, parts: int = 2, same_partition: bool = True) -> None:
        self.parts, self.same = parts, same_partition
        self.limits: dict[str, TargetLimits] = {}

    async def target_topic(self, topic: str) -> str | None:
        return None if topic == "unrouted" else topic

    def refuses(self, target: str) -> bool:
        return False

    async def place(self, tp: TopicPartition, target: str) -> tuple[int, bool]:
        return self.parts, self.same


class FakeBatch:
    """Like aiokafka's ``BatchBuilder``: ``append`` answers ``None`` once it is full."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.records = capacity, 0
        self.headers: list[Any] = []

    def append(self, *, timestamp: int, key: Any, value: Any, headers: Any) -> object | None:
        if self.records == self.capacity:
            return None
        self.headers.append(headers)
        self.records += 1
        return object()

    def record_count(self) -> int:
        return self.records


@dataclass
class FakeTarget:
    """Records what was submitted; each batch holds at most ``per_batch`` records."""

    per_batch: int = 100
    submitted: list[tuple[str, int, int]] = field(default_factory=list)
    futures: list[asyncio.Future[Any]] = field(default_factory=list)
    dead: list[tuple[int, str]] = field(default_factory=list)
    marks: list[list[tuple[str, bytes]]] = field(default_factory=lambda: [[("aa-batch", b"B/9")]])
    built: list[FakeBatch] = field(default_factory=list)

    def codec(self, source: TopicPartition) -> int:
        return 0

    def new_batch(self, limits: Any, codec: int) -> FakeBatch:
        return FakeBatch(self.per_batch)

    def lane(self, topic: str, partition: int, wide: bool) -> int:
        return 0

    async def submit(self, builder: FakeBatch, topic: str, partition: int, lane: int = 0) -> Any:
        self.submitted.append((topic, partition, builder.record_count()))
        self.built.append(builder)
        fut = asyncio.get_running_loop().create_future()
        self.futures.append(fut)
        return fut

    async def dead_letter(self, record: Any, tp: TopicPartition, reason: str, **_: Any) -> Any:
        self.dead.append((record.offset, reason))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def patiently(self, work: Any, what: str) -> Any:
        return await work

    def waiting(self, what: str, waited_s: float, exc: BaseException | None) -> None:
        raise AssertionError("not waiting in these tests")


def forwarder(target: FakeTarget, placement: Placement | None = None, **kw: Any) -> Forwarder:
    router = Router(**{k: kw.pop(k) for k in ("skip", "bad") if k in kw})
    return Forwarder(
        stage_context(settings(**kw), router),
        placement or Placement(),  # type: ignore[arg-type]
        target,  # type: ignore[arg-type]
        lambda tp, o: None,
    )


async def test_records_are_batched_per_target_partition_in_order() -> None:
    target = FakeTarget(per_batch=4)
    pending = await forwarder(target).forward({TP0: recs(TP0, 0, 10), TP1: recs(TP1, 5, 3)})
    # partition 0: 10 records in batches of 4, 4, 2; partition 1 keeps its partition; the
    # partitions' batches go round-robin (see the next test), each partition's in order
    assert target.submitted == [("t", 0, 4), ("t", 1, 3), ("t", 0, 4), ("t", 0, 2)]
    held = [[r.offset for r in h] for _, h, _, _ in pending.sends]
    assert held == [[0, 1, 2, 3], [5, 6, 7], [4, 5, 6, 7], [8, 9]]
    assert pending.offsets == {TP0: 10, TP1: 8}
    assert sum(pending.copied.values()) == 13


class OneBatchPerPartition(FakeTarget):
    """The produce side as aiokafka runs it: a partition's batch waits in ``submit`` until the
    one before it left (``add_batch``), and a request to the broker carries the head of every
    partition's queue, one request in flight at a time (its sender). ``requests`` lists the
    partitions of each request sent."""

    def __init__(self, per_batch: int) -> None:
        super().__init__(per_batch=per_batch)
        self.requests: list[list[int]] = []
        self.queued: dict[int, tuple[asyncio.Future[Any], asyncio.Future[Any]]] = {}
        self.wake = asyncio.Event()

    async def submit(self, builder: FakeBatch, topic: str, partition: int, lane: int = 0) -> Any:
        while partition in self.queued:
            await self.queued[partition][0]  # the one before it leaves with a request
        loop = asyncio.get_running_loop()
        left, acked = loop.create_future(), loop.create_future()
        self.queued[partition] = (left, acked)
        self.wake.set()
        await super().submit(builder, topic, partition)
        return acked

    async def sender(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            request, self.queued = self.queued, {}
            if not request:
                continue
            self.requests.append(sorted(request))
            for left, _ in request.values():
                left.set_result(None)
            for _ in range(3):  # the request is in flight: others run meanwhile
                await asyncio.sleep(0)
            for _, acked in request.values():
                acked.set_result(None)
            self.wake.set()


async def test_a_fetch_of_six_partitions_goes_out_in_requests_of_a_batch_per_partition() -> None:
    """Handed to the producer partition by partition, a partition's second batch waited for
    the request carrying its first: W4's produce requests carried 1.4 batches on average
    (here: 13 requests for 18 batches). Round-robin, each request carries every partition's
    next batch."""
    target = OneBatchPerPartition(per_batch=4)
    parts = [TopicPartition("t", p) for p in range(6)]
    sender = asyncio.create_task(target.sender())
    try:
        pending = await forwarder(target, Placement(parts=6)).forward(
            {tp: recs(tp, 0, 10) for tp in parts}
        )
        await asyncio.gather(*(fut for fut, _, _, _ in pending.sends))
    finally:
        sender.cancel()
    assert target.requests == [list(range(6))] * 3


async def test_batches_sealed_before_a_dead_lettered_record_are_submitted_before_it() -> None:
    target = FakeTarget(per_batch=2)
    events: list[str] = []
    submit, dead_letter = target.submit, target.dead_letter

    async def logged_submit(builder: FakeBatch, topic: str, partition: int, lane: int) -> Any:
        events.append(f"batch {partition}")
        return await submit(builder, topic, partition, lane)

    async def logged_dead_letter(record: Any, tp: TopicPartition, reason: str, **kw: Any) -> Any:
        events.append(f"dead {record.offset}")
        return await dead_letter(record, tp, reason, **kw)

    target.submit, target.dead_letter = logged_submit, logged_dead_letter  # type: ignore[method-assign]
    pending = await forwarder(target, bad={3}, on_error="dead-letter").forward(
        {TP0: recs(TP0, 0, 6)}
    )
    assert events == ["batch 0", "dead 3", "batch 0", "batch 0"]
    assert [[r.offset for r in h] for _, h, _, _ in pending.sends] == [[0, 1], [3], [2, 4], [5]]


async def test_only_the_first_record_of_each_batch_carries_the_batch_mark() -> None:
    target = FakeTarget(per_batch=4)
    await forwarder(target).forward({TP0: recs(TP0, 0, 10), TP1: recs(TP1, 5, 3)})
    for built in target.built:
        marks = [("aa-batch", b"B/9") in h for h in built.headers]
        assert marks == [True] + [False] * (len(marks) - 1)
        assert all(h[:2] == [("aa-origin", b"A"), ("aa-ts", h[1][1])] for h in built.headers)


async def test_a_target_with_fewer_partitions_gets_records_by_key_hash() -> None:
    target = FakeTarget()
    keys = [f"k{i}".encode() for i in range(20)]
    batch = {TP1: [Rec("t", 1, i, key=k) for i, k in enumerate(keys)]}
    pending = await forwarder(target, Placement(parts=3, same_partition=False)).forward(batch)
    by_partition = {p: [r.key for r in held] for (_, held, _, _), (_, p, _) in
                    zip(pending.sends, target.submitted, strict=True)}  # fmt: skip
    assert by_partition == {
        p: [k for k in keys if partition_for(k, 3) == p]
        for p in {partition_for(k, 3) for k in keys}
    }


async def test_skipped_and_unrouted_records_advance_the_offsets_without_a_send() -> None:
    target = FakeTarget()
    unrouted = TopicPartition("unrouted", 0)
    pending = await forwarder(target, skip={1, 2}).forward(
        {TP0: recs(TP0, 0, 4), unrouted: recs(unrouted, 0, 7)}
    )
    assert [[r.offset for r in h] for _, h, _, _ in pending.sends] == [[0, 3]]
    assert pending.offsets == {TP0: 4, unrouted: 7}


async def test_malformed_record_under_fail_stops_its_partition_before_it_and_the_others_go_on() -> (
    None
):
    """Issue 30: a refused record fails its topic, not the flow; before, the batch stopped
    there and the other partitions were not routed (the flow stopped for good)."""
    target = FakeTarget()
    pending = await forwarder(target, bad={3}).forward({TP0: recs(TP0, 0, 6), TP1: recs(TP1, 0, 2)})
    assert pending.malformed is None
    assert pending.failed[TP0].kind == "malformed-headers"
    assert pending.failed[TP0].offset == 3
    assert pending.offsets == {TP0: 3, TP1: 2}  # TP0 up to, not past, the refused record
    assert sorted([r.offset for r in h] for _, h, _, _ in pending.sends) == [[0, 1], [0, 1, 2]]


async def test_malformed_record_under_dead_letter_goes_to_the_dead_letter_topic() -> None:
    target = FakeTarget()
    pending = await forwarder(target, bad={3}, on_error="dead-letter").forward(
        {TP0: recs(TP0, 0, 6)}
    )
    assert pending.malformed is None
    assert [o for o, _ in target.dead] == [3]
    assert pending.offsets == {TP0: 6}


class Delivery:
    """Records every commit; ``keep`` makes non-final commits keep the offsets (like EOS)."""

    def __init__(self, *, transactional: bool = False) -> None:
        self.transactional = transactional
        self.commits: list[tuple[dict[TopicPartition, int], bool]] = []

    async def commit(self, ready: Mapping[TopicPartition, int], *, final: bool) -> bool:
        if self.transactional and not final:
            return False
        self.commits.append((dict(ready), final))
        return True

    def refusal(self, exc: BaseException) -> FlowError | None:
        return None


def committer(delivery: Delivery, **kw: Any) -> tuple[Committer, Settler]:
    s = settings(**{"commit_interval_s": 3600, **kw})
    target = FakeTarget()
    ctx = stage_context(s, Router(), delivery=delivery)
    settler = Settler(ctx, target)  # type: ignore[arg-type]
    return Committer(ctx, settler, target), settler  # type: ignore[arg-type]


def sent(result: Any) -> tuple[asyncio.Future[Any], list[Any], str, TopicPartition]:
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    if isinstance(result, BaseException):
        fut.set_exception(result)
    else:
        fut.set_result(result)
    return fut, recs(TP0, 0, 1), "t", TP0


async def test_offsets_are_committed_only_after_their_batch_settled_in_order() -> None:
    delivery = Delivery()
    c, _ = committer(delivery)
    first, second = Pending(offsets={TP0: 10}), Pending(offsets={TP0: 20, TP1: 5})
    late: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    first.sends.append((late, recs(TP0, 0, 1), "t", TP0))
    loop = asyncio.create_task(c.loop())
    await c.queue.put(first)
    await c.queue.put(second)
    await asyncio.sleep(0)  # let the loop run: it waits on the first batch's future
    assert delivery.commits == []  # nothing committed while the first batch is unsettled
    late.set_result(None)
    await c.queue.put(None)
    await asyncio.wait_for(loop, 5)
    committed = {tp: o for offsets, _ in delivery.commits for tp, o in offsets.items()}
    assert committed == {TP0: 20, TP1: 5}
    assert delivery.commits[-1][1] is True  # the end of the queue commits final


async def test_a_trickle_of_batches_is_committed_once_per_interval_and_at_rest_within_it() -> None:
    """Each batch below leaves the queue empty (a flow keeping up with its source): committing
    after every such batch was a commit request per fetch. Now one commit per interval, and
    the last offsets at rest within the interval, with no batch after them."""
    delivery = Delivery()
    c, _ = committer(delivery, commit_interval_s=0.5)
    loop = asyncio.create_task(c.loop())
    for i in range(1, 6):
        p = Pending(offsets={TP0: 10 * i})
        p.sends.append(sent(None))
        await c.queue.put(p)
        await c.queue.join()
        await asyncio.sleep(0.01)
    assert delivery.commits == [], "no commit before the interval is over"
    await eventually(lambda: delivery.commits, timeout=5, message="a commit at rest")
    assert delivery.commits == [({TP0: 50}, False)], "one commit, of the last offsets, at rest"
    await c.queue.put(None)
    await asyncio.wait_for(loop, 5)
    assert delivery.commits[1:] == [({}, True)]


async def test_a_failed_batch_stops_the_loop_and_nothing_past_it_is_committed() -> None:
    delivery = Delivery()
    c, _ = committer(delivery)
    ok, bad, after = Pending(offsets={TP0: 10}), Pending(offsets={TP0: 20}), Pending({TP0: 30})
    ok.sends.append(sent(None))
    bad.sends.append(sent(KafkaConnectionError("target gone")))
    after.sends.append(sent(None))
    for p in (ok, bad, after):
        c.queue.put_nowait(p)
    with pytest.raises(FlowError, match="target gone"):
        await asyncio.wait_for(c.loop(), 5)
    committed = [o for offsets, _ in delivery.commits for o in offsets.values()]
    assert all(o <= 10 for o in committed), committed
    assert c.ready in ({}, {TP0: 10})  # settled, or committed already: never 20 or 30


async def test_a_batch_refused_while_settling_commits_the_batches_settled_before_it() -> None:
    """The run ends on the refused batch and the next run resumes from the commit: what was
    settled before it, not yet committed (commits once per interval), is committed first so
    that it is not copied again; nothing of the refused batch or after it."""
    delivery = Delivery()
    c, _ = committer(delivery)
    ok, more, bad = Pending(offsets={TP0: 10}), Pending(offsets={TP1: 4}), Pending({TP0: 20})
    ok.sends.append(sent(None))
    more.sends.append(sent(None))
    bad.sends.append(sent(KafkaConnectionError("target gone")))
    for p in (ok, more, bad):
        c.queue.put_nowait(p)
    with pytest.raises(FlowError, match="target gone"):
        await asyncio.wait_for(c.loop(), 5)
    assert delivery.commits == [({TP0: 10, TP1: 4}, True)]


async def test_exactly_once_keeps_ready_offsets_until_the_final_commit_and_counts_then() -> None:
    delivery = Delivery(transactional=True)
    c, settler = committer(delivery)
    p = Pending(offsets={TP0: 10})
    p.sends.append(sent(None))
    p.copied[TP0] = 1
    loop = asyncio.create_task(c.loop())
    await c.queue.put(p)
    await c.queue.join()
    assert delivery.commits == []
    assert c.ready == {TP0: 10}
    assert settler.copied_total == 0  # not counted before the transaction committed
    await c.drain()
    assert delivery.commits == [({TP0: 10}, True)]
    assert settler.copied_total == 1
    await c.queue.put(None)
    await asyncio.wait_for(loop, 5)


async def test_exactly_once_holds_no_source_records_of_settled_batches_until_the_commit() -> None:
    """A settled batch waits for its transaction's commit to be counted (up to
    ``commit_interval_s``): only its counts may wait, not its source records (on the batch
    path each holds its whole fetched partition buffer: W3 exactly-once held 57 MB of them
    per process, past the in-flight share that had released them)."""
    delivery = Delivery(transactional=True)
    c, settler = committer(delivery)
    first, second = Pending(offsets={TP0: 10}), Pending(offsets={TP0: 20})
    first.sends.append(sent(None))
    first.copied[TP0], first.bytes[TP0] = 1, 100
    held = weakref.ref(first.sends[0][1][0])
    second.sends.append(sent(None))
    loop = asyncio.create_task(c.loop())
    await c.queue.put(first)
    await c.queue.put(second)
    del first
    await c.queue.join()
    gc.collect()
    assert held() is None, "a settled batch's source records are held until the commit"
    assert settler.copied_total == 0
    await c.drain()
    assert settler.copied_total == 1  # the counts waited for the commit
    await c.queue.put(None)
    await asyncio.wait_for(loop, 5)


class Consumer:
    def __init__(self) -> None:
        self.fetches = 0

    async def getmany(self, **_: Any) -> dict[TopicPartition, list[Any]]:
        self.fetches += 1
        return {}

    def assignment(self) -> set[TopicPartition]:
        return {TP0}


async def test_a_drain_failing_in_the_revoke_is_raised_by_the_next_fetch() -> None:
    """aiokafka only logs what a rebalance listener raises: the fetch stage keeps it."""
    fetcher = Fetcher(stage_context(settings(), Router(), consumer=Consumer()))

    async def failing_drain() -> None:
        raise FlowError("target down", kind="target-timeout", retriable=True)

    await fetcher.revoke({TP0}, failing_drain)  # returns: the listener must not raise
    assert fetcher.generation == 1
    with pytest.raises(FlowError, match="target down"):
        await fetcher.next_batch()


async def test_a_lagging_flow_queues_no_more_record_bytes_than_its_memory_budget_share() -> None:
    """Batches wait to be routed while the record bytes held and not yet settled would pass
    a quarter of ``memory_budget_mb`` (count alone — ``max_in_flight`` — let 4 batches of any
    size through: memory grew with the records' size while the target lagged)."""
    delivery = Delivery()
    c, _ = committer(delivery, memory_budget_mb=4, max_inflight_batches=4)
    share = 4 * 1024 * 1024 // 4
    late: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    first = Pending(offsets={TP0: 10})
    first.sends.append((late, recs(TP0, 0, 1), "t", TP0))
    second = Pending(offsets={TP0: 20})
    second.sends.append(sent(None))
    loop = asyncio.create_task(c.loop())
    await c.admit(first, await c.reserve({TP0: recs(TP0, 0, 1, value=b"x" * (share - 1000))}))
    reserving = asyncio.create_task(c.reserve({TP0: recs(TP0, 1, 1, value=b"x" * 2000)}))
    for _ in range(20):  # let every ready task run; the first batch stays unsettled
        await asyncio.sleep(0)
    assert not reserving.done(), "a batch was let through past the flow's in-flight byte share"
    assert c.in_flight.held == share - 1000
    late.set_result(None)  # the target acknowledges the first batch: its bytes are released
    await c.admit(second, await asyncio.wait_for(reserving, 5))
    await c.queue.put(None)
    await asyncio.wait_for(loop, 5)
    assert c.in_flight.held == 0
    committed = {tp: o for offsets, _ in delivery.commits for tp, o in offsets.items()}
    assert committed == {TP0: 20}


async def test_a_batch_larger_than_the_byte_share_still_moves_when_nothing_is_held() -> None:
    """One record larger than the share must not stop the flow for good."""
    delivery = Delivery()
    c, _ = committer(delivery, memory_budget_mb=4)
    big = Pending(offsets={TP0: 1})
    big.sends.append(sent(None))
    loop = asyncio.create_task(c.loop())
    held = await asyncio.wait_for(c.reserve({TP0: recs(TP0, 0, 1, value=b"x" * 10 * MIB)}), 5)
    await c.admit(big, held)
    await c.queue.put(None)
    await asyncio.wait_for(loop, 5)
    assert c.in_flight.held == 0


class Fetched:
    """The fetch stage as the flow's loop sees it: ``batches`` one by one, then ``stop``."""

    def __init__(self, batches: list[dict[TopicPartition, list[Any]]], stop: asyncio.Event) -> None:
        self.batches, self.stop = batches, stop
        self.routing = asyncio.Lock()
        self.damage = None
        self.taken = 0

    async def next_batch(self) -> tuple[int, dict[TopicPartition, list[Any]]]:
        self.taken += 1
        if not self.batches:
            self.stop.set()
            return 0, {}
        return 0, self.batches.pop(0)

    def current(self, generation: int, batch: Any) -> bool:
        return True

    def queued(self, offsets: Any) -> None:
        return None

    async def moved_positions(self, batch: Any) -> dict[TopicPartition, int]:
        return {}


async def test_a_fetch_is_not_taken_while_the_fetch_before_it_holds_the_in_flight_share() -> None:
    """The in-flight share is held before a fetch is taken from the consumer, not after its
    target batches were built and handed to the producer: one routed fetch could pass the
    share while the one before it was unacknowledged, which ``MemoryBudget.worst_case`` did
    not count (W4 traced per request, docs/benchmarks-history.md); and a fetch taken and waiting for
    the share would be held beside it too (its next request already in flight)."""
    s = settings(memory_budget_mb=4, commit_interval_s=3600)
    target = FakeTarget()
    ctx = stage_context(s, Router(), delivery=AtLeastOnce(s))
    flow = MirrorFlow(s, Router(), ctx.metrics, delivery=ctx.delivery)  # type: ignore[arg-type]
    stop = asyncio.Event()
    value = b"x" * (MIB * 3 // 4)  # each fetch alone fills most of the 1 MiB in-flight share
    fetches = Fetched(
        [{TP0: recs(TP0, 0, 1, value=value)}, {TP1: recs(TP1, 0, 1, value=value)}], stop
    )
    flow._fetcher = fetches  # type: ignore[assignment]
    flow._forwarder = Forwarder(ctx, Placement(), target, lambda tp, o: None)  # type: ignore[arg-type]
    flow._committer = Committer(ctx, Settler(ctx, target), target)  # type: ignore[arg-type]
    commits = asyncio.create_task(flow._committer.loop())
    fetching = asyncio.create_task(flow._fetch_loop(stop))
    for _ in range(50):  # every ready task runs; the first fetch stays unacknowledged
        await asyncio.sleep(0)
    assert [p for _, p, _ in target.submitted] == [0], "a fetch was routed past the share"
    assert fetches.taken == 1, "a fetch was taken while the share had no room for it"
    assert flow._committer.in_flight.held == len(value)
    target.futures[0].set_result(None)  # acknowledged: the second fetch may be taken now
    for _ in range(50):
        await asyncio.sleep(0)
    assert [p for _, p, _ in target.submitted] == [0, 1]
    target.futures[1].set_result(None)
    await asyncio.wait_for(fetching, 5)
    await flow._committer.queue.put(None)
    await asyncio.wait_for(commits, 5)
    assert flow._committer.in_flight.held == 0


def test_a_batch_filled_on_the_hot_path_carries_its_record_count_and_records() -> None:
    """The forwarder appends to aiokafka's record-batch builder directly; once sealed, the
    batch's record count (the idempotent producer's sequence numbers follow it) and its
    records are what BatchBuilder.append would have made."""
    from aiokafka.producer.message_accumulator import BatchBuilder
    from aiokafka.record.memory_records import MemoryRecords

    from aa.kafka.producers import appender, seal

    builder = BatchBuilder(16384, 0)
    append = appender(builder)
    for n in range(3):
        assert append(n, 1000 + n, None, b"v%d" % n, [("h", b"%d" % n)]) is not None
    seal(builder, 3)
    assert builder.record_count() == 3
    batch = MemoryRecords(bytes(builder._build())).next_batch()
    got = [(r.offset, r.timestamp, r.value, list(r.headers)) for r in batch]
    assert got == [(n, 1000 + n, b"v%d" % n, [("h", b"%d" % n)]) for n in range(3)]


class Fetches:
    """A consumer whose fetches are given, and whose seeks are recorded."""

    def __init__(self, *fetches: dict[TopicPartition, list[Any]]) -> None:
        self.fetches, self.seeks = list(fetches), []  # type: ignore[var-annotated]

    async def getmany(self, **_: Any) -> dict[TopicPartition, list[Any]]:
        return self.fetches.pop(0)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))


async def test_a_batch_failing_its_crc_once_is_fetched_again_and_copying_goes_on() -> None:
    """A fault in transit does not repeat: the records before the batch pass on, the position
    goes back to it, and the next fetch reads it whole."""
    consumer = Fetches(
        {TP0: [*recs(TP0, 0, 2), CorruptBatch(2)], TP1: recs(TP1, 0, 1)},
        {TP0: recs(TP0, 2, 2)},
    )
    fetcher = Fetcher(stage_context(settings(), Router(), consumer=consumer))
    _, first = await fetcher.next_batch()
    assert {tp: [r.offset for r in rs] for tp, rs in first.items()} == {TP0: [0, 1], TP1: [0]}
    assert consumer.seeks == [(TP0, 2)]
    _, second = await fetcher.next_batch()
    assert [r.offset for r in second[TP0]] == [2, 3]
    assert fetcher.damage is None


async def test_raw_batches_fetched_beside_skipped_mirror_batches_hold_only_their_own_bytes() -> (
    None
):
    """A raw batch is a view of its partition's fetched bytes; where the flow skipped mirror
    batches of that partition (two thirds of a topic in a 3-DC mesh) the view would hold them
    too until the copy settles, unseen by the in-flight share (which counts the batch): it
    gets its own bytes. A partition with nothing skipped keeps its views (no copy)."""
    fetched_buffer = bytes(range(256)) * 64
    mixed = RawBatch(memoryview(fetched_buffer)[100:300], 0, 2, 0)
    alone = RawBatch(memoryview(fetched_buffer)[300:400], 0, 1, 0)
    skipper = BatchSkipper("A")
    skipper.skipped[TP0] = 5
    consumer = Fetches({TP0: [mixed], TP1: [alone]})
    fetcher = Fetcher(stage_context(settings(), Router(), consumer=consumer), skipper)
    _, batch = await fetcher.next_batch()
    assert batch[TP0] == [mixed]
    assert type(mixed.data) is bytes
    assert mixed.data == fetched_buffer[100:300]
    assert isinstance(alone.data, memoryview)


async def test_a_batch_failing_its_crc_twice_at_one_offset_stops_the_flow_for_good() -> None:
    consumer = Fetches({TP0: [CorruptBatch(7)]}, {TP0: [CorruptBatch(7)], TP1: recs(TP1, 0, 1)})
    fetcher = Fetcher(stage_context(settings(), Router(), consumer=consumer))
    _, first = await fetcher.next_batch()
    assert first == {}
    assert fetcher.damage is None
    _, second = await fetcher.next_batch()
    assert list(second) == [TP1]  # the other partition's records still go first
    assert consumer.seeks == [(TP0, 7), (TP0, 7)]
    assert fetcher.damage is not None
    assert not fetcher.damage.retriable
    assert "t/0@7" in str(fetcher.damage)


class LaneProducer:
    """What :class:`~aa.mirror.target.Target` uses of an idempotent producer: its id, its
    metadata's topics and partitions, ``create_batch`` and ``send_batch`` (kept, in order,
    unacknowledged)."""

    def __init__(self, producer_id: int) -> None:
        self._txn_manager = type("Txn", (), {"producer_id": producer_id})()
        cluster = type("Cluster", (), {"partitions_for_topic": lambda self, topic: {0, 1}})()
        self.client = type("Client", (), {"add_topic": lambda self, topic: None})()
        self.client.cluster = cluster
        self.sent: list[tuple[int, list[Any]]] = []
        self.acks: list[asyncio.Future[Any]] = []

    def create_batch(self) -> FakeBatch:
        return FakeBatch(4)

    async def send_batch(self, batch: FakeBatch, topic: str, *, partition: int) -> Any:
        self.sent.append((partition, batch.headers[0]))
        self.acks.append(asyncio.get_running_loop().create_future())
        return self.acks[-1]

    def ack(self) -> None:
        for fut in self.acks:
            if not fut.done():
                fut.set_result(None)


async def test_a_lagging_partition_goes_through_its_own_producer_and_changes_only_when_acked() -> (
    None
):
    """aiokafka keeps one produce request in flight per broker and producer, so the six
    produce rounds of a W4 fetch ran one after the other: a partition fetched a full target
    batch or more at a time goes through producer ``partition % 2``; one that keeps up through
    the first (one request per fetch). Its batches carry the ``aa-batch`` mark naming the
    producer that sends them (a flow reading the target skips them by it), and a partition
    changes producer only once its last batch was acknowledged (its order holds)."""
    s = settings(batch_size=1024)
    main, lane = LaneProducer(7), LaneProducer(8)
    clients = FlowClients(main, None, None, None, get_logger("test"), None, (lane,))  # type: ignore[arg-type]
    ctx = StageContext(s, Router(), Metrics(), AtLeastOnce(s), clients)
    fwd = Forwarder(ctx, Placement(parts=2), Target(ctx), lambda tp, o: None)  # type: ignore[arg-type]
    value = b"x" * 300

    def fetch(first: int, n: int) -> dict[TopicPartition, list[Any]]:
        return {tp: recs(tp, first, n, value=value) for tp in (TP0, TP1)}

    await fwd.forward(fetch(0, 2))  # 600 bytes per partition: keeping up
    assert [p for p, _ in main.sent] == [0, 1]
    assert lane.sent == []
    await fwd.forward(fetch(2, 6))  # lagging, but partition 1's last batch is unacknowledged
    assert lane.sent == []
    main.ack()
    await fwd.forward(fetch(8, 6))
    assert [p for p, _ in lane.sent] == [1, 1]  # 6 records: batches of 4 and 2
    assert [p for p, _ in main.sent][-2:] == [0, 0]
    assert all(("aa-batch", b"B/7") in first for _, first in main.sent)
    assert all(("aa-batch", b"B/8") in first for _, first in lane.sent)
