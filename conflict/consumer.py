"""The converged view of a logical topic: reads every DC's copy in one cluster and folds them.

Headers mode: one topic (``users``) holds local and mirrored events: pattern ``^users$``.
Prefix mode: each DC's events are in ``<DC>.users`` (the local DC's own in ``users`` or
``<DC>.users``): :func:`topic_pattern` gives ``^(?:(?:SF|NYC|LON)\\.)?users$``.

Undecodable or unresolvable records are raised (``on_error="raise"``) or written, whole, to a
dead-letter topic in the same cluster with the reason in ``conflict-error`` and the position in
``conflict-src`` (``on_error="dead-letter"``); never dropped. A record whose ``aa-origin``
header (set by the mirror, :mod:`aa.provenance`) names another DC than the event's origin is
refused the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Collection, Iterator
from typing import Any, Literal

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from aa import provenance
from aa.errors import ProvenanceError
from aa.kafka.consumer import known_topics, refresh_metadata
from conflict.envelope import Event
from conflict.errors import ConflictError, DecodeError
from conflict.materializer import Materializer, OnChange
from conflict.types import ResolvedState

DEAD_LETTER_HEADER = "conflict-error"
DEAD_LETTER_SRC_HEADER = "conflict-src"


def topic_pattern(logical: str, dcs: Collection[str] | None = None, separator: str = ".") -> str:
    """Regex of every DC's copy of ``logical`` in prefix mode (``users`` and ``<DC>.users``);
    with ``dcs`` only those DCs' prefixes match. In headers mode use ``^users$``."""
    sep = re.escape(separator)
    dc = "|".join(re.escape(provenance.check_dc_name(d)) for d in dcs) if dcs else r"[^.,/]+"
    return f"^(?:(?:{dc}){sep})?{re.escape(logical)}$"


def logical_topic(topic: str, dcs: Collection[str] | None = None, separator: str = ".") -> str:
    """``SF.users`` -> ``users``; ``users`` -> ``users``. Without ``dcs`` any leading DC-like
    name is a prefix, so pass ``dcs`` when logical topic names contain the separator."""
    head, sep, rest = topic.partition(separator)
    if sep and rest and (head in dcs if dcs is not None else provenance.DC_NAME.match(head)):
        return rest
    return topic


class PatternConsumer:
    """Folds every partition of the topics matching ``pattern`` into a :class:`Materializer`.

    Reads without a consumer group (every instance sees everything), from the materializer's
    offsets (a restored snapshot) or the beginning. ``catch_up`` reads to the current end
    offsets; ``run`` follows until ``stop``, picking up matching topics created meanwhile every
    ``refresh_s``. ``dcs`` (optional) names the DCs, for :func:`logical_topic`.
    """

    def __init__(
        self,
        pattern: str,
        materializer: Materializer | None = None,
        *,
        on_error: Literal["raise", "dead-letter"] = "raise",
        dead_letter_topic: str = "conflict.dead-letter",
        dead_letter_replication: int = 1,
        dcs: Collection[str] | None = None,
        refresh_s: float = 10.0,
        **client_kwargs: Any,
    ) -> None:
        if on_error not in ("raise", "dead-letter"):
            raise ValueError(f"on_error={on_error!r}: use 'raise' or 'dead-letter'")
        self.pattern = re.compile(pattern)
        self.materializer = materializer if materializer is not None else Materializer()
        self.on_error = on_error
        self.dead_letter_topic = dead_letter_topic
        self.dead_letter_replication = dead_letter_replication
        self.dead_lettered = 0
        self.dcs = frozenset(dcs) if dcs is not None else None
        self.refresh_s = refresh_s
        self._client_kwargs = client_kwargs
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._assigned: set[TopicPartition] = set()
        self._stop = asyncio.Event()
        self._running = asyncio.Lock()

    # -- the view ---------------------------------------------------------------------------

    def get(self, key: str, default: Any = None) -> ResolvedState:
        return self.materializer.get(key, default)

    def __iter__(self) -> Iterator[tuple[str, ResolvedState]]:
        """``(key, value)`` in key order."""
        return iter(self.materializer)

    def __len__(self) -> int:
        return len(self.materializer)

    def on_change(self, callback: OnChange) -> None:
        """Call ``callback(key, value)`` whenever a key's converged value changes."""
        self.materializer.on_change(callback)

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self._consumer is not None:
            return
        self._stop.clear()
        consumer = AIOKafkaConsumer(
            enable_auto_commit=False, auto_offset_reset="earliest", **self._client_kwargs
        )
        await consumer.start()
        self._consumer = consumer
        if self.on_error == "dead-letter":
            admin = AIOKafkaAdminClient(**self._client_kwargs)
            await admin.start()
            try:  # the dead-letter topic must exist before the first bad record
                if self.dead_letter_topic not in await admin.list_topics():
                    topic = NewTopic(self.dead_letter_topic, 1, self.dead_letter_replication)
                    await admin.create_topics([topic])
            finally:
                await admin.close()
            self._producer = AIOKafkaProducer(
                acks="all", enable_idempotence=True, **self._client_kwargs
            )
            await self._producer.start()

    async def stop(self) -> None:
        """Stop :meth:`run` (waiting for it to return), then close the clients. Idempotent."""
        self._stop.set()
        async with self._running:
            if self._consumer is not None:
                consumer, self._consumer = self._consumer, None
                self._assigned = set()
                await consumer.stop()
            if self._producer is not None:
                producer, self._producer = self._producer, None
                await producer.stop()

    async def __aenter__(self) -> PatternConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- reading ----------------------------------------------------------------------------

    async def _assign(self) -> list[TopicPartition]:
        """Assign every partition of the matching topics; new ones start at the
        materializer's offset or the beginning, known ones keep their position."""
        consumer = self._consumer
        assert consumer is not None, "start() first"
        await refresh_metadata(consumer)
        topics = sorted(t for t in known_topics(consumer) if self.pattern.fullmatch(t))
        tps = [
            TopicPartition(t, p)
            for t in topics
            for p in sorted(consumer.partitions_for_topic(t) or ())
        ]
        if set(tps) != self._assigned:
            consumer.assign(tps)  # resets every position: seek all from what was folded
            for tp in tps:
                offset = self.materializer.offsets.get(f"{tp.topic}:{tp.partition}")
                if offset is None:
                    await consumer.seek_to_beginning(tp)
                else:
                    consumer.seek(tp, offset)
            self._assigned = set(tps)
        return tps

    async def _handle(self, record: Any) -> None:
        try:
            event = Event.decode(record.value, record.headers)
            key = (record.key or b"").decode("utf-8", "replace")
            if event.key != key:
                raise DecodeError("key", f"record key {key!r} differs from event key {event.key!r}")
            try:
                origin = provenance.read(record.headers).origin
            except ProvenanceError as exc:
                raise DecodeError("headers", str(exc)) from None
            if origin is not None and origin != event.origin:
                raise DecodeError(
                    f"headers.{provenance.ORIGIN}",
                    f"the mirror says {origin!r}, the event says {event.origin!r}",
                )
            self.materializer.apply(event, logical_topic(record.topic, self.dcs))
        except ConflictError as exc:
            if self.on_error == "raise" or self._producer is None:
                raise
            await self._dead_letter(record, exc)
        self.materializer.offsets[f"{record.topic}:{record.partition}"] = record.offset + 1

    async def _dead_letter(self, record: Any, exc: ConflictError) -> None:
        assert self._producer is not None
        headers = [
            *(record.headers or ()),
            (DEAD_LETTER_HEADER, str(exc).encode()),
            (DEAD_LETTER_SRC_HEADER, f"{record.topic}/{record.partition}/{record.offset}".encode()),
        ]
        await (
            await self._producer.send(
                self.dead_letter_topic, record.value, key=record.key, headers=headers
            )
        )
        self.dead_lettered += 1

    async def _read_batch(self) -> int:
        assert self._consumer is not None
        batch = await self._consumer.getmany(timeout_ms=200)
        n = 0
        for records in batch.values():
            for r in records:
                await self._handle(r)
                n += 1
        return n

    async def catch_up(self, timeout: float = 60.0) -> int:
        """Read every matching partition up to its end offset now; return records read."""
        async with self._running:
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
                read += await self._read_batch()
            return read

    async def _behind(self, tps: list[TopicPartition], ends: dict[TopicPartition, int]) -> bool:
        assert self._consumer is not None
        for tp in tps:
            if await self._consumer.position(tp) < ends[tp]:
                return True
        return False

    async def run(self) -> None:
        """Follow the topics until :meth:`stop`; errors (``on_error="raise"``) end it."""
        async with self._running:
            assert self._consumer is not None, "start() first"
            refreshed = -float("inf")
            while not self._stop.is_set():
                if time.monotonic() - refreshed >= self.refresh_s:
                    await self._assign()
                    refreshed = time.monotonic()
                if not self._assigned:  # nothing matches yet: wait for stop or the next refresh
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), timeout=0.2)
                    continue
                await self._read_batch()
