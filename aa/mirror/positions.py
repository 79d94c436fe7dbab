"""Where an exactly-once flow's source positions live: ``aa.offsets.<source>.internal`` on the
target, one compacted record per source partition (key ``topic/partition``, value the next offset
to copy, when it was stored, and the source topic's id), written inside the flow's transactions
(:mod:`aa.mirror.eos`) and read back on start and by the lag exporter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer, TopicPartition

from aa.lifecycle import started
from aa.mirror.settings import FlowSettings
from aa.offsets.writer import COMPACTED_INTERNAL_CONFIGS
from aa.tail import TopicReader, Unreadable

OFFSETS_TOPIC_CONFIGS = dict(COMPACTED_INTERNAL_CONFIGS)
"""One record per source partition after compaction; segments roll every 10 minutes or 1 MiB
so that the cleaner keeps the uncompacted head small (it never cleans the active segment)."""


def offset_key(tp: TopicPartition) -> bytes:
    return f"{tp.topic}/{tp.partition}".encode()


def parse_offsets(
    records: Iterable[Any],
    into: dict[TopicPartition, int] | None = None,
    ids: dict[TopicPartition, str | None] | None = None,
    unreadable: Unreadable | None = None,
    writers: dict[TopicPartition, str] | None = None,
) -> dict[TopicPartition, int]:
    """The newest stored offset per source partition (updating ``into`` when given), and in
    ``ids`` the source topic id stored with it (``None`` in records written before ids were),
    in ``writers`` the transactional id that wrote it (where the record says).
    A record that is not a position (written there by mistake) is skipped and described in
    ``unreadable``: the partition keeps its older position, behind, never ahead."""
    out: dict[TopicPartition, int] = {} if into is None else into
    for r in records:
        if r.key is None or r.value is None:
            continue
        topic, _, part = r.key.decode(errors="replace").rpartition("/")
        try:
            tp = TopicPartition(topic, int(part))
            value = orjson.loads(r.value)
            offset, topic_id = int(value["offset"]), value.get("topic_id")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            if unreadable is not None:
                unreadable.skip(r, exc)
            continue
        out[tp] = offset
        if ids is not None:
            ids[tp] = topic_id
        if writers is not None and isinstance(writer := value.get("txn"), str):
            writers[tp] = writer
    return out


class StoredOffsets:
    """The source offsets an exactly-once flow committed on its target, read once and then
    kept up to date by reading only what was written since (the lag exporter refreshes every
    few seconds: it must not re-read the topic each time)."""

    def __init__(self, settings: FlowSettings) -> None:
        self.topic = settings.eos_offsets_topic
        self._reader = TopicReader(self.topic, settings.target_client)
        self.offsets: dict[TopicPartition, int] = {}
        self.ids: dict[TopicPartition, str | None] = {}
        self.writers: dict[TopicPartition, str] = {}
        """Per partition, the transactional id that stored its position (aa.mirror.eos)."""
        self.records_read = 0
        self._skipped = Unreadable(
            "eos_positions_unreadable",
            "records that are not positions are skipped (a partition keeps its older "
            "position: copies again, never skips)",
        )

    async def refresh(self) -> dict[TopicPartition, int]:
        await self._reader.start()
        self.records_read += await self._reader.catch_up_each(
            lambda records: parse_offsets(
                records, self.offsets, self.ids, self._skipped, self.writers
            )
        )
        self._skipped.warn(self.topic)
        return dict(self.offsets)

    async def close(self) -> None:
        await self._reader.close()

    async def __aenter__(self) -> StoredOffsets:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def stored_offsets(
    settings: FlowSettings,
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, str | None]]:
    """The source offsets an exactly-once flow has committed on its target, and the source
    topic id stored with each."""
    async with StoredOffsets(settings) as stored:
        return await stored.refresh(), dict(stored.ids)


async def fence(settings: FlowSettings, transactional_id: str) -> None:
    """Fence ``transactional_id`` on the flow's target: its producer's epoch is bumped and its
    open transaction aborted (what initialising a producer with that id does), so whoever
    still holds it commits nothing more."""
    producer = AIOKafkaProducer(**settings.target_client, transactional_id=transactional_id)
    await started(producer)
    try:
        await producer.begin_transaction()  # waits for the producer id: fenced by then
    finally:
        await producer.stop()
