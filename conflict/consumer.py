"""The converged view of a logical topic: reads every DC's copy in one cluster and folds them.

Headers mode: one topic (``users``) holds local and mirrored events. Prefix mode: a pattern
(``^(.*\\.)?users$``) covers ``users`` and every ``<DC>.users``. Undecodable or unresolvable
records are raised (``on_error="raise"``) or written, whole, to a dead-letter topic in the same
cluster with the reason in ``conflict-error`` (``on_error="dead-letter"``); never dropped.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, Literal

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from conflict.envelope import Event
from conflict.errors import ConflictError, DecodeError
from conflict.materializer import Materializer, OnChange

DEAD_LETTER_HEADER = "conflict-error"


def logical_topic(topic: str, separator: str = ".") -> str:
    """``SF.users`` -> ``users``; ``users`` -> ``users``."""
    return topic.rsplit(separator, 1)[-1] if separator in topic else topic


class PatternConsumer:
    """Folds every partition of the topics matching ``pattern`` into a :class:`Materializer`.

    Reads without a consumer group (every instance sees everything); ``catch_up`` reads to the
    current end offsets, ``run`` keeps going until ``stop``.
    """

    def __init__(
        self,
        pattern: str,
        materializer: Materializer | None = None,
        *,
        on_error: Literal["raise", "dead-letter"] = "raise",
        dead_letter_topic: str = "conflict.dead-letter",
        **client_kwargs: Any,
    ) -> None:
        self.pattern = re.compile(pattern)
        self.materializer = materializer if materializer is not None else Materializer()
        self.on_error = on_error
        self.dead_letter_topic = dead_letter_topic
        self.dead_lettered = 0
        self._client_kwargs = client_kwargs
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._stop = asyncio.Event()

    def get(self, key: str, default: Any = None) -> Any:
        return self.materializer.get(key, default)

    def on_change(self, callback: OnChange) -> None:
        self.materializer.on_change(callback)

    async def _assign(self) -> list[TopicPartition]:
        assert self._consumer is not None
        await self._consumer._client.force_metadata_update()
        topics = [t for t in self._consumer._client.cluster.topics() if self.pattern.fullmatch(t)]
        tps = [
            TopicPartition(t, p)
            for t in sorted(topics)
            for p in sorted(self._consumer.partitions_for_topic(t) or ())
        ]
        self._consumer.assign(tps)
        for tp in tps:
            offset = self.materializer.offsets.get(f"{tp.topic}:{tp.partition}")
            if offset is None:
                await self._consumer.seek_to_beginning(tp)
            else:
                self._consumer.seek(tp, offset)
        return tps

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(
            enable_auto_commit=False, auto_offset_reset="earliest", **self._client_kwargs
        )
        await self._consumer.start()
        if self.on_error == "dead-letter":
            admin = AIOKafkaAdminClient(**self._client_kwargs)
            await admin.start()
            try:  # the dead-letter topic must exist before the first bad record
                if self.dead_letter_topic not in await admin.list_topics():
                    await admin.create_topics([NewTopic(self.dead_letter_topic, 1, 1)])
            finally:
                await admin.close()
            self._producer = AIOKafkaProducer(acks="all", **self._client_kwargs)
            await self._producer.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def __aenter__(self) -> PatternConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, record: Any) -> None:
        try:
            event = Event.decode(record.value, record.headers)
            if event.key != (record.key or b"").decode("utf-8", "replace"):
                raise DecodeError("key", f"record key {record.key!r} differs from {event.key!r}")
            self.materializer.apply(event, logical_topic(record.topic))
        except ConflictError as exc:
            if self.on_error == "raise" or self._producer is None:
                raise
            headers = [
                *(record.headers or ()),
                (DEAD_LETTER_HEADER, str(exc).encode()),
                ("conflict-src", f"{record.topic}/{record.partition}/{record.offset}".encode()),
            ]
            await (
                await self._producer.send(
                    self.dead_letter_topic, record.value or b"", key=record.key, headers=headers
                )
            )
            self.dead_lettered += 1
        self.materializer.offsets[f"{record.topic}:{record.partition}"] = record.offset + 1

    async def catch_up(self, timeout: float = 60.0) -> int:
        """Read every matching partition up to its end offset now; return records read."""
        assert self._consumer is not None, "start() first"
        tps = await self._assign()
        if not tps:
            return 0
        ends = await self._consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout
        read = 0
        while await self._behind(tps, ends):
            if time.monotonic() > deadline:
                raise TimeoutError(f"catch_up did not reach the end offsets in {timeout}s")
            batch = await self._consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for r in records:
                    await self._handle(r)
                    read += 1
        return read

    async def _behind(self, tps: list[TopicPartition], ends: dict[TopicPartition, int]) -> bool:
        assert self._consumer is not None
        for tp in tps:
            if await self._consumer.position(tp) < ends[tp]:
                return True
        return False

    async def run(self) -> None:
        """Follow the topics until :meth:`stop`."""
        assert self._consumer is not None, "start() first"
        await self._assign()
        while not self._stop.is_set():
            batch = await self._consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for r in records:
                    await self._handle(r)
