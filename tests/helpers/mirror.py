"""Drive mirror flows in tests: a flow running in the background, committed offsets."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from aa import provenance
from aa.config import read_yaml
from aa.errors import ProvenanceError
from aa.logs import get_logger
from aa.mirror.build import build_flows
from aa.mirror.context import StageContext
from aa.mirror.delivery import AtLeastOnce, Delivery, FlowClients
from aa.mirror.flow import MirrorFlow
from aa.mirror.settings import FlowSettings
from aa.mirror.supervisor import Backoff, Supervisor, dump_tasks
from aa.observe.metrics import Metrics
from aa.protocols import Malformed, Route, Skip
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce


def sf_to_nyc(
    sf: str, nyc: str, group_id: str, *, names: tuple[str, str] = ("SF", "NYC"), **settings: Any
) -> FlowSettings:
    """The SF->NYC flow settings most flow tests use: plain bootstrap clients, ``settings`` on
    top of the defaults; ``names`` for DC names unique to a test (exactly-once flows: the
    transactional id and the offsets topic are per flow name, and tests share brokers)."""
    return FlowSettings(
        names[0], names[1], {"bootstrap_servers": sf}, {"bootstrap_servers": nyc},
        group_id=group_id, **settings,
    )  # fmt: skip


class OriginOnlyRouter:
    """Full-mesh headers routing for one topic pattern: forward only records written locally."""

    def __init__(self, source: str, target: str, pattern: str) -> None:
        self.source, self.target, self._pattern = source, target, pattern
        self._stamps: dict[tuple[str, int], provenance.LocalStamp] = {}

    def subscription(self) -> str:
        return self._pattern

    def target_topic(self, source_topic: str) -> str | None:
        return source_topic

    def forwards_mirrored(self) -> bool:
        return True

    def local_stamp(self, topic: str, partition: int) -> None:
        return None  # the record path only

    def route_batch(
        self, topic: str, partition: int, records: Sequence[Any], believed: Any = None
    ) -> list[Route]:
        return [self.route(topic, partition, r.offset, r.headers) for r in records]

    def route(
        self, topic: str, partition: int, offset: int, headers: Sequence[tuple[str, bytes]]
    ) -> Route:
        if not provenance.has_mirror_headers(headers):
            stamp = self._stamps.get((topic, partition))
            if stamp is None:
                stamp = self._stamps[(topic, partition)] = provenance.LocalStamp(
                    self.source, self.target, topic, partition
                )
            return stamp.headers(offset, headers)
        try:
            p = provenance.read(headers)
        except ProvenanceError as exc:
            return Malformed(str(exc))
        if not p.is_local:
            return Skip("not-origin")
        ref = provenance.SourceRef(self.source, topic, partition, offset)
        return provenance.with_provenance(headers, p.forwarded(self.source, self.target, ref))


def topology_flow(
    sf: str, nyc: str, topic: str, extra: str = "", *, names: tuple[str, str] = ("SF", "NYC")
) -> tuple[FlowSettings, Any]:
    """The real SF->NYC flow of a topology copying ``topic`` (router included: the batch path),
    ``extra`` YAML added to the topology; ``names`` for DC names unique to a test (exactly-once:
    the transactional id is per flow, and tests share brokers)."""
    a, b = names
    t = read_yaml(
        f"datacenters:\n  {a}: {{bootstrap: '{sf}'}}\n  {b}: {{bootstrap: '{nyc}'}}\n"
        f"flows: [{a}->{b}]\ntopics: ['{topic}']\n{extra}"
        "heartbeats: {enabled: false}\ncheckpoints: {enabled: false}\n"
    )
    [(settings, router)] = build_flows(t, t.inbound(b))
    return settings, router


def exact(topic: str) -> str:
    return "^" + re.escape(topic) + "$"


@contextlib.asynccontextmanager
async def running_flow(
    settings: FlowSettings, router: Any, metrics: Metrics | None = None
) -> AsyncIterator[tuple[MirrorFlow, asyncio.Task[None]]]:
    """Run a flow in the background; stop it (gracefully) on exit. A failure of the body says
    how the flow had ended if it ended on its own (a test waiting for copies otherwise only
    says that none came)."""
    flow = MirrorFlow(settings, router, metrics or Metrics())
    stop = asyncio.Event()
    task = asyncio.create_task(flow.run(stop))
    try:
        yield flow, task
    except Exception as failed:
        if not task.done():  # where it waits, in the captured log: a slow flow, or a stuck one
            dump_tasks("the test failed")
        elif not task.cancelled() and task.exception() is not None:
            failed.add_note(f"the flow had ended on its own: {task.exception()!r}")
        raise
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)


@contextlib.asynccontextmanager
async def supervised(settings: FlowSettings, router: Any) -> AsyncIterator[Supervisor]:
    """A flow under a :class:`Supervisor` with short backoffs (restarts within a second);
    stopped (gracefully) on exit."""
    async with running_supervisor(short_backoffs([(settings, router)])) as sup:
        yield sup


def short_backoffs(flows: list[Any]) -> Supervisor:
    """A supervisor of ``flows`` that restarts them within a second."""
    return Supervisor(flows, Metrics(), backoff=Backoff(0.2, 1.0), shutdown_timeout_s=20)


@contextlib.asynccontextmanager
async def running_supervisor(sup: Supervisor) -> AsyncIterator[Supervisor]:
    """``sup`` running in the background; stopped (gracefully) on exit."""
    run = asyncio.create_task(sup.run(install_signals=False))
    try:
        yield sup
    except Exception:
        dump_tasks("the test failed")  # where the flows wait, in the captured log
        raise
    finally:
        sup.stop()
        await asyncio.wait_for(run, 60)


async def committed(
    bootstrap: str, group: str, topic: str, partitions: int
) -> dict[int, int | None]:
    """The group's committed offset per partition (``None`` when nothing is committed)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        return {p: await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        await consumer.stop()


async def until_committed(
    bootstrap: str, group: str, topic: str, want: dict[int, int | None], timeout: float = 60
) -> None:
    """Poll until the group's committed offsets of ``topic`` are ``want`` (an at-least-once
    flow commits within ``commit_interval_s`` of settling, not at once)."""

    async def there() -> bool:
        return await committed(bootstrap, group, topic, len(want)) == want

    await eventually(there, timeout=timeout, message=f"{topic} committed at {want}")


@dataclass(frozen=True)
class EosFlow:
    """An exactly-once SF->NYC flow of a new topic (see :func:`eos_flow`)."""

    sf: str
    nyc: str
    topic: str
    settings: FlowSettings
    router: OriginOnlyRouter


async def eos_flow(
    clusters: Mapping[str, Any], unique_name: Callable[[str], str], name: str, *,
    partitions: int, **settings: Any,
) -> EosFlow:  # fmt: skip
    """A new topic in SF and the exactly-once flow that copies it to NYC, under DC names unique
    to the test (the transactional id is per flow, ``aa.eos.A.B``, and tests share brokers)."""
    sf, nyc = clusters["SF"].bootstrap, clusters["NYC"].bootstrap
    tag = uuid.uuid4().hex[:6]
    a, b = f"S{tag}", f"N{tag}"
    topic = await create_topic(sf, unique_name(name), partitions=partitions)
    flow = sf_to_nyc(sf, nyc, unique_name("g"), names=(a, b), delivery="exactly-once", **settings)
    return EosFlow(sf, nyc, topic, flow, OriginOnlyRouter(a, b, exact(topic)))


def stage_context(
    settings: FlowSettings,
    router: Any = None,
    *,
    consumer: Any = None,
    delivery: Delivery | None = None,
    log: Any = None,
    metrics: Metrics | None = None,
) -> StageContext:
    """The context of one flow run for a unit test of a stage: fakes stand in for the clients
    the stage uses; the rest is ``None``."""
    clients = FlowClients(None, consumer, None, None, log or get_logger("test"))  # type: ignore[arg-type]
    return StageContext(
        settings, router, metrics or Metrics(), delivery or AtLeastOnce(settings), clients
    )


async def resumes_without_copying_again(
    settings: FlowSettings, router: Any, topic: str, *, isolation_level: str = "read_uncommitted"
) -> None:
    """After a first run copied ``old-0..299`` of ``topic`` (two partitions) and its positions
    were lost: write ``new-0..99``, run the flow again, and assert the target holds every old and
    new record exactly once."""
    sf = settings.source_client["bootstrap_servers"]
    nyc = settings.target_client["bootstrap_servers"]
    await produce(sf, topic, [Rec(None, f"new-{i}".encode(), partition=i % 2) for i in range(100)])
    async with running_flow(settings, router):
        got = await consume_all(
            nyc, topic, count=400, timeout=90, isolation_level=isolation_level, settle=3.0
        )
    values = sorted(r.value.decode() for r in got)
    assert len(values) == 400, f"{len(values) - len(set(values))} copied twice"
    assert set(values) == {f"old-{i}" for i in range(300)} | {f"new-{i}" for i in range(100)}


async def topic_failed(control: Any, topic: str, timeout: float = 60.0) -> Any:
    """The :class:`~aa.mirror.control.TopicFailure` of ``topic`` once the flow whose
    ``control`` this is failed it (a record the target refuses for good, ``on_error: fail``)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while topic not in control.failures:
        if asyncio.get_running_loop().time() > deadline:  # a polling deadline
            raise AssertionError(f"{topic} did not fail within {timeout}s")
        await asyncio.sleep(0.05)
    return control.failures[topic]
