"""Where a flow resumes when its stored positions are gone: its offset syncs.

An exactly-once flow's positions live in ``aa.offsets.<source>.internal`` on the target; an
at-least-once flow's in its consumer group's committed offsets on the source, which the broker
deletes when the group has been empty for ``offsets.retention.minutes`` (7 days by default) or
when someone deletes the group. Either way, resuming from the beginning would copy every record
the source still holds again. The newest committed sync of a partition says how far the flow
copied it (exactly-once: the syncs ride in the same transactions; at-least-once: a sync is
written only for acknowledged copies), for the topic incarnation it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from aa.offsets.store import OffsetSyncStore


@dataclass(frozen=True, slots=True)
class CopiedEnd:
    """The offset after the newest record a partition's syncs say was copied, and the id of
    the source topic incarnation the sync giving it was written for (``None``: not known)."""

    offset: int
    topic_id: str | None


async def copied_ends(
    sync_topic: str, client: Mapping[str, Any], source: str, target: str
) -> dict[TopicPartition, CopiedEnd]:
    """Per source partition, where the committed syncs of ``source`` → ``target`` say the copy
    ended."""
    store = await OffsetSyncStore(source, target).load(sync_topic, client)
    ids = store.copied_end_ids()
    return {
        TopicPartition(t, p): CopiedEnd(end, ids.get((t, p)))
        for (t, p), end in store.copied_ends().items()
    }


def same_incarnation(
    ends: Mapping[TopicPartition, CopiedEnd], now: Mapping[str, str], *, require_id: bool
) -> dict[TopicPartition, int]:
    """The ``ends`` written for the incarnation of their topic the source holds now (``now``:
    topic -> id). An end written with another id belongs to a topic deleted and created again
    since: resuming from it would skip the new topic's records below it. An end written without
    an id (by an aa before ids were written, or before the flow learned its topic's id) is kept
    only when not ``require_id``."""
    out = {}
    for tp, end in ends.items():
        if end.topic_id is None and require_id:
            continue
        if end.topic_id is not None and end.topic_id != now.get(tp.topic):
            continue
        out[tp] = end.offset
    return out


async def still_held(
    consumer: AIOKafkaConsumer, ends: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """The ``ends`` the source still reaches: a copied end past a partition's end offset
    belongs to an older incarnation of its topic (deleted and created again), whose offsets
    mean nothing now."""
    try:
        highs = await consumer.end_offsets(list(ends))
    except (KafkaError, AssertionError):
        return {}  # the topics are gone: nothing of them to resume
    return {tp: end for tp, end in ends.items() if end <= highs.get(tp, -1)}
