"""Before Spark starts: reach every DC, list its topics and fix each partition's offset range.

Doing this with aiokafka first means an unreachable DC fails the run in seconds with its name
(Spark's Kafka source would retry for minutes), and Spark then reads exact offset ranges
(``assign`` + ``startingOffsets``/``endingOffsets`` JSON) that are recorded for the next run.
What the probe found that findings join with (the mirrors' committed offsets, truncated
partitions' horizons) is turned into small frames here too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from pyspark.sql import functions as F

from aa.admin import ClusterAdmin
from aa.config import client_kwargs
from aa.config.client import preflight
from aa.logs import get_logger
from aa.mirror.build import group_id
from aa.offsets.groups import group_offsets
from spark_reconcile.errors import DcUnreachableError
from spark_reconcile.frames import literal_frame
from spark_reconcile.plan import ReadPlan
from spark_reconcile.ranges import PartitionRange
from spark_reconcile.state import RunState
from spark_reconcile.window import Window

CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Mirrored:
    """The committed source offset of the mirror's flow ``source->target`` on one partition:
    every record below ``committed`` has been copied (acknowledged by the target)."""

    source: str
    target: str
    topic: str
    partition: int
    committed: int


@dataclass(frozen=True, slots=True)
class Probe:
    """What the probe found: the ranges of each reachable DC, why the others are not checked,
    the mirrors' committed offsets, and when (epoch ms)."""

    ranges: dict[str, list[PartitionRange]]
    unreachable: dict[str, str] = field(default_factory=dict)
    mirrored: list[Mirrored] = field(default_factory=list)
    at_ms: int = 0

    def all_ranges(self) -> list[PartitionRange]:
        """Every reachable DC's ranges, in one list."""
        return [r for rs in self.ranges.values() for r in rs]


async def probe(
    plan: ReadPlan,
    window: Window,
    state: RunState | None = None,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> Probe:
    """The partition ranges to read in every DC that answers. A DC that does not answer is
    listed in ``unreachable`` (the others are still checked); :class:`DcUnreachableError`,
    naming every DC, only when none answers."""
    at_ms = int(time.time() * 1000)
    results = await asyncio.gather(
        *(_probe_dc(plan, dc, window, state, timeout_s) for dc in plan.dcs),
        return_exceptions=True,
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    other = [r for r in failed if not isinstance(r, DcUnreachableError)]
    if other:
        raise other[0]
    if failed and len(failed) == len(results):
        raise DcUnreachableError("; ".join(str(r) for r in failed))
    out = Probe({}, at_ms=at_ms)
    for dc, r in zip(plan.dcs, results, strict=True):
        if isinstance(r, BaseException):
            out.unreachable[dc] = str(r)
        else:
            out.ranges[dc], mirrored = r
            out.mirrored.extend(mirrored)
    return out


async def _probe_dc(
    plan: ReadPlan, dc: str, window: Window, state: RunState | None, timeout_s: float
) -> tuple[list[PartitionRange], list[Mirrored]]:
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
            selected = [r.topic for r in plan.reads(dc, topics)]
            configs = await admin.topic_configs(selected)
        compacted = {t for t, c in configs.items() if "compact" in c.get("cleanup.policy", "")}
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
            ranges = await _ranges(consumer, plan, dc, topics, window, state)
            ranges = [replace(r, compacted=r.topic in compacted) for r in ranges]
            return ranges, await _mirrored(kwargs, plan, dc, {r.topic for r in ranges})
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


async def _mirrored(
    kwargs: Mapping[str, Any], plan: ReadPlan, dc: str, topics: set[str]
) -> list[Mirrored]:
    """Committed offsets of the at-least-once flows reading ``dc`` (their consumer groups live
    in ``dc``). Exactly-once flows keep theirs on the target: for them only the grace period
    decides when a record is due."""
    out = []
    for flow in plan.topology.flows:
        if flow.source != dc:
            continue
        try:
            offsets = await group_offsets(kwargs, group_id(flow))
        except Exception as exc:  # noqa: BLE001 - no committed offsets: the grace period decides
            _log().info("reconcile.no_mirror_offsets", flow=flow.name, error=repr(exc))
            continue
        out += [
            Mirrored(dc, flow.target, tp.topic, tp.partition, off)
            for tp, off in offsets.items()
            if tp.topic in topics
        ]
    return out


def _log() -> Any:
    return get_logger("spark_reconcile.probe")


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
        out.append(PartitionRange(dc, tp.topic, logical, tp.partition, start, ends[tp], begins[tp]))
    return out


def mirrored_frame(spark: Any, probed: Probe) -> Any:
    """``probed.mirrored`` as a frame: each flow's committed source offset per partition."""
    return literal_frame(
        spark,
        [(m.source, m.target, m.topic, m.partition, m.committed) for m in probed.mirrored],
        "source string, target string, topic string, partition int, committed long",
    )


def horizons_frame(spark: Any, records: Any, all_ranges: Sequence[PartitionRange]) -> Any:
    """``dc, ltopic, partition, horizon_ts`` of truncated partitions: the time of the first
    record each still holds (the probe time when retention removed them all)."""
    cut = [r for r in all_ranges if r.log_start > 0 and r.start <= r.log_start]
    starts = literal_frame(
        spark,
        [(r.dc, r.topic, r.logical, r.partition, r.log_start, r.empty) for r in cut],
        "dc string, topic string, ltopic string, partition int, offset long, empty boolean",
    )
    first = records.select("dc", "topic", "partition", "offset", "ts")
    return (
        starts.join(first, ["dc", "topic", "partition", "offset"], "left")
        .withColumn(
            "ts",
            F.when(F.col("empty"), F.lit(int(time.time() * 1000))).otherwise(F.col("ts")),
        )
        .groupBy("dc", "ltopic", "partition")
        .agg(F.max("ts").alias("horizon_ts"))
        .filter(F.col("horizon_ts").isNotNull())
    )
