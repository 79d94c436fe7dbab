"""Repair: re-publish missing records to the DCs that lack them, as the mirror would have.

Each record keeps its key, value, application headers, timestamp and (when the target topic has
it) partition, and gets the provenance a copy carries (``aa-origin``, ``aa-path`` origin,target,
the unchanged ``aa-src``), so the next run matches it to its origin. Idempotent because the
findings come from a fresh read: a record repaired once is present on the next run and is not
re-published. The job repairs only the first DC lacking a record on each branch of the
origin's route tree (the mirrors carry the copy on), and the Spark executors produce, each its
own partitions of the findings: nothing is collected to the driver.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from pyspark.sql import functions as F

from aa.config import Datacenter, client_kwargs
from aa.kafka.producers import producer_id
from aa.logs import get_logger
from aa.provenance import LOCAL, SourceRef, batch_mark, strip
from spark_reconcile.errors import ReconcileError
from spark_reconcile.plan import ReadPlan


def _log() -> Any:
    """The logger, bound at call time (a module-level one would keep the stderr of import)."""
    return get_logger("spark_reconcile.repair")


@dataclass(frozen=True, slots=True)
class RepairRecord:
    target: str
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    ts: int


def to_repair(
    row: Mapping[str, Any],
    topics: Mapping[tuple[str, str, str], str],
    partitions: Mapping[tuple[str, str], int],
) -> RepairRecord:
    """What to produce for one row of the ``missing`` finding. ``topics``: (origin, target,
    logical topic) -> the physical topic in the target."""
    origin, target = row["origin"], row["target"]
    topic = topics[(origin, target, row["ltopic"])]
    src = SourceRef(origin, row["topic"], int(row["partition"]), int(row["offset"]))
    app = [
        (h["key"], bytes(h["value"]) if h["value"] is not None else b"")
        for h in row["headers"] or ()
    ]
    headers = [*strip(app), *LOCAL.forwarded(origin, target, src).headers()]
    n = partitions.get((target, topic), 0)
    part = src.partition if src.partition < n else None
    key = bytes(row["key"]) if row["key"] is not None else None
    value = bytes(row["value"]) if row["value"] is not None else None
    return RepairRecord(target, topic, part, key, value, headers, int(row["ts"]))


async def publish(
    datacenters: Mapping[str, Datacenter], records: Iterable[RepairRecord], batch: int = 1000
) -> Counter[str]:
    """Produce ``records`` to their target DCs (acks=all, idempotent producers); returns the
    number published per ``target/topic``. Each record is a batch of its own carrying the
    producer's ``aa-batch`` mark, as a mirror's batch does: the flows reading the target
    believe provenance only in batches a mirror marked (:mod:`aa.kafka.fetched`), so an
    unmarked repaired copy would be carried on as the target's own write."""
    producers: dict[str, tuple[Any, tuple[str, bytes]]] = {}
    done: Counter[str] = Counter()
    pending: list[Any] = []
    try:
        for rec in records:
            if rec.target not in producers:
                producers[rec.target] = await _started(datacenters[rec.target])
            producer, mark = producers[rec.target]
            one = producer.create_batch()
            one.append(key=rec.key, value=rec.value, timestamp=rec.ts, headers=[*rec.headers, mark])
            partition = rec.partition
            if partition is None:
                partition = await _partition_for(producer, rec.topic, rec.key)
            pending.append(await producer.send_batch(one, rec.topic, partition=partition))
            done[f"{rec.target}/{rec.topic}"] += 1
            if len(pending) >= batch:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        for producer, _ in producers.values():
            await producer.stop()
    return done


async def _started(dc: Datacenter) -> tuple[Any, tuple[str, bytes]]:
    """A started idempotent producer for ``dc`` and its ``aa-batch`` mark there (the broker
    gives an idempotent producer its id as it starts)."""
    producer = AIOKafkaProducer(acks="all", enable_idempotence=True, **client_kwargs(dc))
    await producer.start()
    pid = producer_id(producer)
    if pid is None:
        await producer.stop()
        raise ReconcileError(f"DC {dc.name}: the repair's producer got no producer id")
    return producer, batch_mark(dc.name, pid)


async def _partition_for(producer: Any, topic: str, key: bytes | None) -> int:
    """The partition the producer's own partitioner would choose for ``key``."""
    every = sorted(await producer.partitions_for(topic))
    available = list(producer.client.cluster.available_partitions_for_topic(topic) or ())
    return int(DefaultPartitioner()(key, every, available))


def repair(
    missing_df: Any, plan: ReadPlan, partitions: Mapping[tuple[str, str], int]
) -> Counter[str]:
    """Re-publish the ``missing`` rows (with ``key``, ``value``, ``headers``) from the
    executors; returns the number published per ``target/topic``."""
    datacenters = {dc: plan.datacenter(dc) for dc in plan.dcs}
    missing_df = without_translated(missing_df, plan)
    logical = sorted({r.ltopic for r in missing_df.select("ltopic").distinct().collect()})
    topics = {
        (o, t, lt): plan.physical_name(o, t, lt)
        for o in plan.dcs
        for t in plan.dcs
        for lt in logical
    }
    parts = dict(partitions)

    def publish_partition(rows: Iterable[Any]) -> Iterable[tuple[str, int]]:
        records = (to_repair(r.asDict(recursive=True), topics, parts) for r in rows)
        return list(asyncio.run(publish(datacenters, records)).items())

    done: Counter[str] = Counter()
    for name, n in missing_df.rdd.mapPartitions(publish_partition).collect():
        done[name] += n
    for name, n in sorted(done.items()):
        _log().info("reconcile.repaired", target=name, records=n)
    return done


def translated_ids(pairs: Iterable[tuple[str, str]], plan: ReadPlan) -> set[tuple[str, str]]:
    """The (target DC, source topic) pairs a flow into that DC translates schema ids of
    (a ``schemas`` section, :mod:`aa.schemas`): repair would write the origin's bytes, with
    the origin registry's ids, so it leaves them alone."""
    flows = [(f.target, f.schemas) for f in plan.topology.flows if f.schemas is not None]
    return {
        (target, topic)
        for target, topic in pairs
        if any(into == target and schemas.frames(topic) for into, schemas in flows)
    }


def without_translated(missing_df: Any, plan: ReadPlan) -> Any:
    """``missing_df`` less the rows :func:`translated_ids` leaves alone, each pair logged."""
    if not any(f.schemas is not None for f in plan.topology.flows):
        return missing_df
    pairs = [(r.target, r.topic) for r in missing_df.select("target", "topic").distinct().collect()]
    skip = translated_ids(pairs, plan)
    for target, topic in sorted(skip):
        _log().warning(
            "reconcile.repair_skipped",
            target=target,
            topic=topic,
            reason="its schema ids are translated into the target's registry; repair would "
            "write the origin's ids: let the flow copy these records again (reset its group) "
            "instead",
        )
    if not skip:
        return missing_df
    keys = [f"{target}\u0000{topic}" for target, topic in skip]
    return missing_df.filter(~F.concat_ws("\u0000", "target", "topic").isin(*keys))
