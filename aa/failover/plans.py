"""Build failover plans from the target cluster alone (it must work while the old primary is
down): from the checkpoints stored there, or from a point in time."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.checkpoints.model import Checkpoint
from aa.checkpoints.task import checkpoint_topic, read_checkpoints
from aa.config import Topology, client_kwargs
from aa.failover.plan import Move, PlanError
from aa.kafka.consumer import refresh_metadata
from aa.lifecycle import started
from aa.offsets.groups import group_offsets
from aa.offsets.translate import PartitionPlan
from aa.times import iso


def sources_into(topology: Topology, target: str, source: str | None) -> list[str]:
    if source is not None:
        if not any(f.source == source and f.target == target for f in topology.flows):
            raise PlanError(f"--from {source}: no flow {source}->{target} in the topology")
        return [source]
    return sorted({f.source for f in topology.flows if f.target == target})


async def group_checkpoints(
    topology: Topology, group: str, target: str, source: str | None
) -> tuple[str, list[Checkpoint]]:
    """The newest checkpoints of ``group`` stored in ``target`` and the DC they came from."""
    client = client_kwargs(topology.datacenter(target))
    found: dict[str, list[Checkpoint]] = {}
    for src in sources_into(topology, target, source):
        state = await read_checkpoints(checkpoint_topic(topology, src, target), client)
        if cps := state.for_group(group):
            found[src] = cps
    if not found:
        where = source or " or ".join(sources_into(topology, target, None))
        raise PlanError(
            f"no checkpoints of group {group!r} from {where} in {target}: check the group name, "
            "that checkpoints are enabled and select it (checkpoints.groups), or use --at TIME"
        )
    if len(found) > 1:
        raise PlanError(
            f"group {group!r} has checkpoints from {', '.join(sorted(found))} in {target}: "
            "say which DC the group ran in with --from"
        )
    [(src, cps)] = found.items()
    return src, cps


async def plan_from_checkpoints(
    topology: Topology, group: str, target: str, source: str | None
) -> tuple[str, list[Move]]:
    src, cps = await group_checkpoints(topology, group, target, source)
    current = await group_offsets(client_kwargs(topology.datacenter(target)), group)
    return src, [
        Move(
            cp.target_topic,
            cp.partition,
            cp.downstream,
            current.get(TopicPartition(cp.target_topic, cp.partition)),
            f"checkpoint {cp.exactness} ({src} {cp.topic}/{cp.partition}@{cp.upstream})",
        )
        for cp in cps
    ]


def moves_from_translation(
    plans: Sequence[PartitionPlan], current: dict[TopicPartition, int]
) -> list[Move]:
    out = []
    for p in plans:
        topic = p.target_topic or p.topic
        out.append(
            Move(
                topic,
                p.partition,
                p.target_offset,
                current.get(TopicPartition(topic, p.partition)),
                f"{p.exactness} ({p.source} {p.topic}/{p.partition}@{p.offset})",
            )
        )
    return out


async def plan_at_time(
    topology: Topology, group: str, target: str, ts_ms: int, topics: Sequence[str]
) -> list[Move]:
    """The first offset at or after ``ts_ms`` per partition of ``topics`` in ``target``
    (the timestamp index; copies keep their CreateTime)."""
    client = client_kwargs(topology.datacenter(target))
    current = await group_offsets(client, group)
    if not topics:
        topics = sorted({tp.topic for tp in current})
    if not topics:
        raise PlanError(
            f"--at: group {group!r} has neither checkpoints nor offsets in {target}; name the "
            "topics with --topic"
        )
    consumer = AIOKafkaConsumer(**client, enable_auto_commit=False)
    await started(consumer)
    try:
        tps = []
        for t in topics:
            parts = consumer.partitions_for_topic(t)
            if not parts:
                await refresh_metadata(consumer)
                parts = consumer.partitions_for_topic(t)
            if not parts:
                raise PlanError(f"--at: topic {t!r} does not exist in {target}")
            tps += [TopicPartition(t, p) for p in sorted(parts)]
        found = await consumer.offsets_for_times(dict.fromkeys(tps, ts_ms))
        begins = await consumer.beginning_offsets(tps)
        ends = await consumer.end_offsets(tps)
        moves = []
        for tp in tps:
            hit = found.get(tp)
            offset = ends[tp] if hit is None else hit.offset
            if begins[tp] > 0 and offset == begins[tp]:
                first = await _timestamp_at(consumer, tp, begins[tp])
                if first is not None and first > ts_ms:
                    raise PlanError(
                        f"--at: {iso(ts_ms)} is before the retention start of {target} "
                        f"{tp.topic}/{tp.partition} (oldest record held: offset {begins[tp]}, "
                        f"written {iso(first)}); records written since then were deleted. "
                        "Choose a later time; nothing committed"
                    )
            moves.append(
                Move(tp.topic, tp.partition, offset, current.get(tp), f"time {iso(ts_ms)}")
            )
        return moves
    finally:
        await consumer.stop()


async def _timestamp_at(consumer: AIOKafkaConsumer, tp: TopicPartition, offset: int) -> int | None:
    consumer.assign([tp])
    consumer.seek(tp, offset)
    batch = await consumer.getmany(tp, timeout_ms=5000, max_records=1)
    records = batch.get(tp) or []
    return records[0].timestamp if records else None
