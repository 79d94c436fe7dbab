"""Which target id each source id became: remembered in a compacted topic in the target DC
(``aa.schema-ids.<source>.internal``), so a restarted flow neither asks the registries nor
registers again what it already copied.

One record per source id (the key: the id in decimal), the value naming both registries'
URLs and the target id. A record written for other registries (the flow's URLs changed) is
not believed. The topic holds one record per schema the flow ever copied (compaction keeps
the newest per id): it grows with the source registry's schemas, never with time or records.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from aa.tail import TopicReader, Unreadable

READ_TIMEOUT_S = 60.0


def encode(source_url: str, target_url: str, source_id: int, target_id: int) -> tuple[bytes, bytes]:
    """The (key, value) of one learned pair."""
    value = {"source": source_url, "target": target_url, "target_id": target_id}
    return str(source_id).encode(), orjson.dumps(value)


def decode(
    key: bytes | None, value: bytes | None, source_url: str, target_url: str
) -> tuple[int, int] | None:
    """The (source id, target id) a record holds when it was written for these registries;
    ``None`` for another pair of registries. Raises ``ValueError`` for a record that is not
    one of these."""
    if key is None or value is None:
        raise ValueError("a record without key or value")
    data = orjson.loads(value)
    if not isinstance(data, dict):
        raise ValueError("the value is not a JSON object")  # noqa: TRY004 - bad input, one kind
    if data.get("source") != source_url or data.get("target") != target_url:
        return None
    target_id = data.get("target_id")
    if not isinstance(target_id, int) or isinstance(target_id, bool):
        raise ValueError("target_id is not an integer")  # noqa: TRY004 - bad input, one kind
    return int(key), target_id


async def load(
    topic: str, client: Mapping[str, Any], source_url: str, target_url: str, size: int
) -> OrderedDict[int, int]:
    """The pairs the topic holds for these registries, the newest ``size`` of them."""
    learned: OrderedDict[int, int] = OrderedDict()
    unreadable = Unreadable(
        "schema_ids_record_skipped", "not written by aa's schema translation; left as it is"
    )

    def take(records: list[Any]) -> None:
        for r in records:
            try:
                pair = decode(r.key, r.value, source_url, target_url)
            except ValueError as exc:
                unreadable.skip(r, exc)
                continue
            if pair is not None:
                learned[pair[0]] = pair[1]
                learned.move_to_end(pair[0])
                if len(learned) > size:
                    learned.popitem(last=False)

    async with TopicReader(topic, client) as reader:
        await reader.catch_up_each(take, READ_TIMEOUT_S)
    unreadable.warn(topic)
    return learned


async def remember(
    producer: AIOKafkaProducer,
    topic: str,
    source_url: str,
    target_url: str,
    source_id: int,
    target_id: int,
) -> None:
    """Write one learned pair and wait for the target's acknowledgement."""
    key, value = encode(source_url, target_url, source_id, target_id)
    await producer.send_and_wait(topic, value, key=key, partition=0)
