"""Where an exactly-once flow resumes when a stored position is gone: its offset syncs.

A flow's positions live in ``aa.offsets.<source>.internal`` on the target; its offset syncs ride
in the same transactions, so the newest committed sync of a partition says how far the flow
copied it. When the positions topic was deleted or emptied, resuming from the beginning would
copy every record again into a target whose readers were promised each record once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from aa.offsets.store import OffsetSyncStore


async def copied_ends(
    sync_topic: str, client: Mapping[str, Any], source: str, target: str
) -> dict[TopicPartition, int]:
    """Per source partition, the offset after the newest record the committed syncs of
    ``source`` → ``target`` say was copied."""
    store = await OffsetSyncStore(source, target).load(sync_topic, client)
    return {TopicPartition(t, p): end for (t, p), end in store.copied_ends().items()}


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
