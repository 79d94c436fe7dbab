"""Before Spark starts: reach every DC, list its topics and fix each partition's offset range.

Doing this with aiokafka first means an unreachable DC fails the run in seconds with its name
(Spark's Kafka source would retry for minutes), and Spark then reads exact offset ranges
(``assign`` + ``startingOffsets``/``endingOffsets`` JSON) that are recorded for the next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.admin import ClusterAdmin
from aa.config import client_kwargs
from aa.config.client import preflight
from spark_reconcile.errors import DcUnreachableError
from spark_reconcile.plan import ReadPlan
from spark_reconcile.state import RunState
from spark_reconcile.window import Window

CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """Offsets ``[start, end)`` of one partition of one DC's topic to read."""

    dc: str
    topic: str
    logical: str
    partition: int
    start: int
    end: int

    @property
    def empty(self) -> bool:
        return self.end <= self.start


async def probe(
    plan: ReadPlan,
    window: Window,
    state: RunState | None = None,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> dict[str, list[PartitionRange]]:
    """DC -> the partition ranges to read; raises :class:`DcUnreachableError` naming every DC
    that did not answer."""
    results = await asyncio.gather(
        *(_probe_dc(plan, dc, window, state, timeout_s) for dc in plan.dcs),
        return_exceptions=True,
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        unreachable = [r for r in failed if isinstance(r, DcUnreachableError)]
        if len(unreachable) != len(failed):
            raise next(r for r in failed if not isinstance(r, DcUnreachableError))
        raise DcUnreachableError("; ".join(str(r) for r in unreachable))
    return {
        dc: r for dc, r in zip(plan.dcs, results, strict=True) if not isinstance(r, BaseException)
    }


async def _probe_dc(
    plan: ReadPlan, dc: str, window: Window, state: RunState | None, timeout_s: float
) -> list[PartitionRange]:
    spec = plan.datacenter(dc)
    kwargs: dict[str, Any] = client_kwargs(spec)
    kwargs["request_timeout_ms"] = int(timeout_s * 1000)
    await _tcp_check(dc, spec.bootstrap, timeout_s)
    await preflight([spec], timeout_s=timeout_s)  # TLS/SASL refusals: one clear error
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline, ClusterAdmin(dc, **kwargs) as admin:
            infos = await admin.topics()
        topics = {name: t.partitions for name, t in infos.items() if not t.internal}
    except (Exception, asyncio.CancelledError) as exc:  # aiokafka's own error classes too
        if isinstance(exc, asyncio.CancelledError) and not deadline.expired():
            raise  # cancelled from outside, not by our deadline
        raise DcUnreachableError(
            f"DC {dc} at {spec.bootstrap} is unreachable: {exc!r} (check the broker is up "
            "and the bootstrap address in the topology file)"
        ) from exc
    consumer = AIOKafkaConsumer(enable_auto_commit=False, **kwargs)
    try:
        async with asyncio.timeout(timeout_s * 4):
            await consumer.start()
            return await _ranges(consumer, plan, dc, topics, window, state)
    except TimeoutError as exc:
        raise DcUnreachableError(
            f"DC {dc} at {spec.bootstrap} did not answer offset requests in time"
        ) from exc
    finally:
        await _stop(consumer)


async def _stop(consumer: Any) -> None:
    """Stop ``consumer``. aiokafka 0.14 may raise ``CancelledError`` from its own internal task
    when a group-less consumer stops right after starting; only a real cancellation of ours
    propagates."""
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


async def _tcp_check(dc: str, bootstrap: str, timeout_s: float) -> None:
    """Fail fast, naming the DC, when no bootstrap address accepts a TCP connection."""
    errors = []
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            async with asyncio.timeout(timeout_s):
                _, writer = await asyncio.open_connection(host.strip("[]"), int(port))
        except (OSError, TimeoutError, ValueError) as exc:
            errors.append(f"{address}: {exc!r}")
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise DcUnreachableError(
        f"DC {dc} at {bootstrap} is unreachable: {'; '.join(errors)} (check the broker is up "
        "and the bootstrap address in the topology file)"
    )


async def _ranges(
    consumer: Any,
    plan: ReadPlan,
    dc: str,
    topics: Mapping[str, int],
    window: Window,
    state: RunState | None,
) -> list[PartitionRange]:
    reads = plan.reads(dc, topics)
    tps: dict[TopicPartition, str] = {}
    for r in reads:
        for p in range(topics[r.topic]):
            tps[TopicPartition(r.topic, p)] = r.logical
    if not tps:
        return []
    ends: Mapping[TopicPartition, int] = await consumer.end_offsets(list(tps))
    begins: Mapping[TopicPartition, int] = await consumer.beginning_offsets(list(tps))
    found = await consumer.offsets_for_times(dict.fromkeys(tps, window.read_from_ms))
    out = []
    for tp, logical in tps.items():
        at = found.get(tp)
        start = at.offset if at is not None else ends[tp]
        if state is not None:
            recorded = state.end_offset(dc, tp.topic, tp.partition)
            if recorded is not None:  # also see what arrived since the last run (late copies)
                start = min(start, recorded)
        start = max(start, begins[tp])
        out.append(PartitionRange(dc, tp.topic, logical, tp.partition, start, ends[tp]))
    return out
