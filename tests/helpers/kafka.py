"""Small async helpers for tests: create topics, produce records, consume them back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.protocol.admin import DeleteGroupsRequest


@dataclass(frozen=True, slots=True)
class Rec:
    """A record to produce."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]] = field(default_factory=tuple)
    partition: int | None = None
    timestamp_ms: int | None = None


async def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
) -> str:
    """Create ``name`` and wait until its metadata shows every partition."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=dict(config or {}))])
    finally:
        await admin.close()
    await wait_for_partitions(bootstrap, name, partitions)
    return name


async def wait_for_partitions(
    bootstrap: str, topic: str, partitions: int, timeout: float = 30.0
) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            parts = await consumer._client.fetch_all_metadata()
            if len(parts.partitions_for_topic(topic) or ()) >= partitions:
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"topic {topic} has no {partitions} partitions after {timeout}s"
                )
            await asyncio.sleep(0.1)
    finally:
        await consumer.stop()


async def produce(bootstrap: str, topic: str, records: Iterable[Rec], **producer_kw: Any) -> None:
    """Produce ``records`` (pipelined) and wait until all are acknowledged."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, **producer_kw)
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                key=r.key,
                value=r.value,
                headers=list(r.headers),
                partition=r.partition,
                timestamp_ms=r.timestamp_ms,
            )
            for r in records
        ]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def consume_all(
    bootstrap: str,
    topic: str,
    *,
    count: int,
    timeout: float = 30.0,
    isolation_level: str = "read_uncommitted",
    settle: float = 0.0,
    distinct: Callable[[Any], Hashable] | None = None,
) -> list[Any]:
    """Read ``topic`` from the beginning until ``count`` records arrived; return them.

    With ``settle`` > 0, keep reading that many more seconds after reaching ``count`` so that
    unexpected extra records (duplicates) are seen too. With ``distinct``, ``count`` counts
    distinct ``distinct(record)`` values, so duplicates (at-least-once re-copies) do not end the
    wait before every record arrived. Raises ``AssertionError`` on timeout.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level=isolation_level,
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + timeout
        parts = consumer.partitions_for_topic(topic)
        while not parts:  # the topic may not exist yet (a mirror creates it)
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}@{bootstrap}: topic not found in {timeout}s")
            await asyncio.sleep(0.2)
            await consumer._client.force_metadata_update()
            parts = consumer.partitions_for_topic(topic)
        consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
        await consumer.seek_to_beginning()
        out: list[Any] = []
        seen: set[Hashable] = set()
        settle_until: float | None = None
        while True:
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                out.extend(records)
                if distinct is not None:
                    seen.update(distinct(r) for r in records)
            now = time.monotonic()
            got = len(seen) if distinct is not None else len(out)
            if got >= count and settle_until is None:
                settle_until = now + settle
            if settle_until is not None and now >= settle_until:
                return out
            if now > deadline:
                ends = await consumer.end_offsets(consumer.assignment())
                raise AssertionError(
                    f"{topic}@{bootstrap}: got {got} of {count} "
                    f"{'distinct ' if distinct else ''}records in {timeout}s; "
                    f"end offsets {sorted((tp.partition, o) for tp, o in ends.items())}"
                )
    finally:
        await consumer.stop()


async def delete_topic(bootstrap: str, topic: str, timeout: float = 60.0) -> None:
    """Delete ``topic`` and wait until the cluster no longer lists it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([topic])

        async def gone() -> bool:
            return topic not in await admin.list_topics()

        await eventually(gone, timeout=timeout, message=f"{topic} deleted")
    finally:
        await admin.close()


async def delete_group(bootstrap: str, group: str) -> None:
    """Delete consumer group ``group`` and its committed offsets, as the broker does when an
    empty group's offsets pass ``offsets.retention.minutes`` (7 days by default)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        node = await admin.find_coordinator(group)
        response = await admin._send_request(DeleteGroupsRequest([group]), node)
        errors = [code for _, code in response.results if code]
        assert not errors, f"DeleteGroups {group}: error codes {errors}"
    finally:
        await admin.close()


async def eventually(
    check: Any, *, timeout: float = 120.0, interval: float = 0.2, message: str = "condition"
) -> Any:
    """Poll ``check`` (sync or async callable) until it returns a truthy value, with a deadline.

    The default deadline is for what a loaded machine really takes: with two test suites on 2
    cores (load 35-47) an `aa run` took 34 s to print its metrics address, past the 30 s the
    default was."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} not reached within {timeout}s (last: {result!r})")
        await asyncio.sleep(interval)


class _EveryCodec(dict[TopicPartition, int]):
    """``LeanRecords.codecs`` that also keeps every codec set, per partition."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[int, set[int]] = {}

    def __setitem__(self, tp: TopicPartition, codec: int) -> None:
        self.seen.setdefault(tp.partition, set()).add(codec)
        super().__setitem__(tp, codec)


async def batch_codecs(
    bootstrap: str, topic: str, *, partitions: int, count: int, timeout: float = 60.0
) -> dict[int, set[int]]:
    """The compression codecs (Kafka's numbers: :data:`aa.kafka.records.CODECS`) of the record
    batches holding the first ``count`` records of ``topic`` (its ``partitions`` read), per
    partition, as aa's own consumer hook sees them (:mod:`aa.kafka.fetched`)."""
    from aa.kafka import fetched, switch  # the flow's hook: installed for this consumer too

    fetched.install()
    lean = switch.LeanRecords()
    seen = lean.codecs = _EveryCodec()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", key_deserializer=lean
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        got = 0
        deadline = time.monotonic() + timeout
        while got < count:
            assert time.monotonic() < deadline, f"{topic}: {got} of {count} records"
            batch = await consumer.getmany(timeout_ms=200)
            got += sum(len(records) for records in batch.values())
        return seen.seen
    finally:
        await consumer.stop()
