"""Failback: the safe way back to the old primary after a failover.

1. Report what the old primary holds that never left it: records of the old→new flow beyond
   the last one it copied (from the offset syncs in the new primary), counted with the flow's
   own routing, so records that were never meant to be copied are not counted.
2. Resync: the new→old flow must have copied everything written in the new primary meanwhile
   (its lag from committed state is zero) before the group moves back.
3. Translate the group's offsets in the new primary back to the old one (per origin, so the
   old primary's own records that never left are read too: nothing is lost).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.config import Flow, Topology, client_kwargs
from aa.failover.plan import Move, PlanError
from aa.failover.plans import moves_from_translation
from aa.lag import PartitionLag, flow_lag, holds_heartbeats, mirrored_partitions
from aa.lifecycle import started
from aa.offsets.groups import group_offsets
from aa.offsets.live import load_stores, translate_group
from aa.policy import FlowRouter

COUNT_TIMEOUT_S = 60.0
"""How long counting one partition's records left behind may take."""


@dataclass(frozen=True, slots=True)
class Orphans:
    topic: str
    partition: int
    copied_end: int
    end: int
    records: int
    """Records in ``[copied_end, end)`` the old→new flow would copy (never reached new)."""


@dataclass(frozen=True, slots=True)
class FailbackReport:
    old: str
    new: str
    orphans: list[Orphans]
    resync: list[PartitionLag]
    moves: list[Move]

    @property
    def resynced(self) -> bool:
        return all(p.records == 0 for p in self.resync)


def _flow(topology: Topology, source: str, target: str) -> Flow:
    try:
        return topology.flow(f"{source}->{target}")
    except KeyError:
        raise PlanError(
            f"failback needs the flow {source}->{target} in the topology (both directions)"
        ) from None


async def orphans(topology: Topology, old: str, new: str) -> list[Orphans]:
    flow = topology.flow(f"{old}->{new}")
    router = FlowRouter(topology, flow)
    [store] = (await load_stores(topology, [(old, new)])).values()
    client = client_kwargs(topology.datacenter(old))
    # aa's heartbeats are not the application's records: not orphans to read in place
    tps = await mirrored_partitions(router, client, skip=holds_heartbeats(topology))
    if not tps:
        return []
    consumer = AIOKafkaConsumer(
        **client, enable_auto_commit=False, isolation_level="read_committed"
    )
    await started(consumer)
    try:
        ends = await consumer.end_offsets(tps)
        begins = await consumer.beginning_offsets(tps)
        out = []
        for tp in tps:
            copied = store.copied_end(tp.topic, tp.partition)
            start = max(begins[tp], copied if copied is not None else begins[tp])
            n = await _count_forwarded(consumer, router, tp, start, ends[tp])
            out.append(Orphans(tp.topic, tp.partition, start, ends[tp], n))
        return out
    finally:
        await consumer.stop()


async def _count_forwarded(
    consumer: AIOKafkaConsumer, router: FlowRouter, tp: TopicPartition, start: int, end: int
) -> int:
    """The records of ``tp`` in ``[start, end)`` the flow forwards. Read to ``end`` whatever a
    slow broker takes, within :data:`COUNT_TIMEOUT_S`: a fetch that answered empty once ended
    the count early, and the report said fewer records were left behind (none, at load 50)."""
    if start >= end:
        return 0
    consumer.assign([tp])
    consumer.seek(tp, start)
    n = 0
    deadline = time.monotonic() + COUNT_TIMEOUT_S
    while (at := await consumer.position(tp)) < end:
        if time.monotonic() > deadline:
            raise PlanError(
                f"reading {tp.topic}/{tp.partition} to count the records left behind stopped at "
                f"offset {at} of {end} after {COUNT_TIMEOUT_S:.0f} s: retry; nothing committed"
            )
        batch = await consumer.getmany(tp, timeout_ms=1000)
        records = [r for r in batch.get(tp, []) if r.offset < end]
        routes = router.route_batch(tp.topic, tp.partition, records)
        n += sum(1 for r in routes if isinstance(r, list))
    return n


async def failback_report(topology: Topology, group: str, old: str, new: str) -> FailbackReport:
    _flow(topology, old, new)
    back = _flow(topology, new, old)
    lost = await orphans(topology, old, new)
    resync = await flow_lag(topology, back)
    plans = await translate_group(topology, group, new, old)
    topics = {p.target_topic or p.topic for p in plans}
    resync = [p for p in resync if p.topic in topics] or resync
    current = await group_offsets(client_kwargs(topology.datacenter(old)), group)
    return FailbackReport(old, new, lost, resync, moves_from_translation(plans, current))
