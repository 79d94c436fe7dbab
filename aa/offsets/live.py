"""The async shell around translation: load the sync stores a translation needs from the
clusters that hold them, read a group's offsets, and translate them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aa.config import Topology, client_kwargs, names
from aa.errors import AaError
from aa.offsets.groups import GroupError, group_offsets, list_groups
from aa.offsets.store import OffsetSyncStore
from aa.offsets.translate import PartitionPlan, Stores, translate_offset
from aa.policy.naming import is_internal

CONNECT_TIMEOUT_S = 20.0


def sync_topic(topology: Topology, source: str, target: str) -> str:
    return names.for_flow(topology.offset_sync.topic, source, target)


def needed(topology: Topology, source: str, target: str) -> list[tuple[str, str]]:
    """The flows whose syncs translating ``source`` → ``target`` may use."""
    flows = {(f.source, f.target) for f in topology.flows}
    out = [(source, target)] if (source, target) in flows else []
    for dc in topology.dc_names:
        if dc != source and (dc, source) in flows:
            out.append((dc, source))
            if dc != target and (dc, target) in flows:
                out.append((dc, target))
    return out


async def load_stores(topology: Topology, pairs: Iterable[tuple[str, str]]) -> Stores:
    async def one(src: str, dst: str) -> tuple[tuple[str, str], OffsetSyncStore]:
        client = client_kwargs(topology.datacenter(dst))
        store = OffsetSyncStore(src, dst)
        try:
            await asyncio.wait_for(
                store.load(sync_topic(topology, src, dst), client), CONNECT_TIMEOUT_S
            )
        except (TimeoutError, OSError) as exc:
            raise AaError(
                f"cannot read the {src}->{dst} offset syncs from {dst} "
                f"({topology.datacenter(dst).bootstrap}): {exc!r}"
            ) from exc
        return (src, dst), store

    return dict(await asyncio.gather(*(one(s, d) for s, d in pairs)))


async def translate_group(
    topology: Topology, group: str, source: str, target: str
) -> list[PartitionPlan]:
    """Translate ``group``'s committed offsets in ``source`` into ``target`` offsets."""
    for dc in (source, target):
        if dc not in topology.dc_names:
            raise AaError(f"unknown DC {dc!r}; the topology has {', '.join(topology.dc_names)}")
    if source == target:
        raise AaError("--from and --to name the same DC")
    client = client_kwargs(topology.datacenter(source))
    offsets = await group_offsets(client, group)
    offsets = {tp: o for tp, o in offsets.items() if not is_internal(tp.topic)}
    if not offsets:
        known = await list_groups(client)
        hint = ", ".join(known[:10]) or "none"
        raise GroupError(
            f"group {group!r} has no committed offsets in {source}: check the name "
            f"(groups there: {hint})"
        )
    stores = await load_stores(topology, needed(topology, source, target))
    return [
        translate_offset(tp.topic, tp.partition, o, source, target, stores)
        for tp, o in sorted(offsets.items())
    ]
