"""``python -m bench.rawcopy``: the least a copier can do, as W1's ``rawcopy`` runner.

It copies one topic from a source cluster to the same partitions of a target cluster, fetched
record batch by fetched record batch: each batch is written to the target as it was fetched
(records, compression, timestamps unchanged: nothing decoded, nothing re-encoded, no header
added), with only the batch header fields a producer owns rewritten (producer id, epoch and
sequence, the base offset and leader epoch the broker assigns anyway, the transactional bit),
and its CRC with them. What limits it is the brokers and the clients' plumbing (fetch, produce
requests, acks), not any work per record: it is the broker's limit as a batch copier meets it.

It is built from the parts aa's flow uses, so the comparison is of the work per record and
not of the clients: aiokafka's consumer with aa's hook handing out whole undecoded batches
(:mod:`aa.kafka.fetched`, :class:`~aa.kafka.records.RawBatch`; one record per batch decoded,
as the hook reads aa's batch mark), and aiokafka's idempotent producers (acks=all), one per
``aa.mirror.target.LANES`` as an at-least-once flow has, a partition always through the same
one. It commits nothing and writes no offset syncs (aa does both).

It runs until stopped (SIGTERM), like a replicator; the harness counts what arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import struct
import sys
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from aa.kafka import fetched
from aa.kafka.records import BATCH_HEADER, RawBatch
from aa.kafka.switch import LeanRecords
from aa.mirror.target import LANES

try:
    from aa.mirror import _restamp as _helper
except ImportError:  # not built: rawcopy (and aa's batch path) need it
    _helper = None  # type: ignore[assignment]  # checked in main

_PRODUCER = struct.Struct(">qhi")  # producer id, epoch, base sequence
_PRODUCER_AT = 43
_START = struct.Struct(">qii")  # base offset, batch length, partition leader epoch
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_AT = 21
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_AT = 23
_CRC = struct.Struct(">I")
_CRC_AT = 17
TRANSACTIONAL = 0x10
"""The transactional bit of a batch's attributes: a copy is written by a plain idempotent
producer, so it is cleared."""


def producer_owned(batch: Any, producer_id: int, epoch: int, sequence: int) -> bytearray:
    """A fetched record batch (bytes-like, magic 2) as a producer with this id, epoch and next
    sequence sends it: a copy with those fields, base offset 0, no leader epoch, not
    transactional, and its CRC-32C recomputed; every other byte (attributes' codec and
    timestamp type, timestamps, record count, the records) as fetched."""
    out = bytearray(batch)
    length = _START.unpack_from(out, 0)[1]
    _START.pack_into(out, 0, 0, length, -1)
    attributes = _ATTRIBUTES.unpack_from(out, _ATTRIBUTES_AT)[0]
    _ATTRIBUTES.pack_into(out, _ATTRIBUTES_AT, attributes & ~TRANSACTIONAL)
    _PRODUCER.pack_into(out, _PRODUCER_AT, producer_id, epoch, sequence)
    with memoryview(out) as view:
        _CRC.pack_into(out, _CRC_AT, _helper.crc32c(view[_ATTRIBUTES_AT:]))
    return out


def sequence_span(batch: Any) -> int:
    """The sequence numbers a batch takes (its last offset delta + 1, as the broker counts
    them: the records it holds unless compaction left gaps)."""
    return int(_LAST_DELTA.unpack_from(batch, _LAST_DELTA_AT)[0]) + 1


class WholeBatch:
    """One fetched batch as aiokafka's producer takes it through ``send_batch``: the parts of
    its ``BatchBuilder`` that the accumulator and sender call (closed from the start: sent
    without lingering; built once, with the producer state the accumulator gives it)."""

    __slots__ = ("_built", "_data", "_state")

    def __init__(self, data: Any) -> None:
        if len(data) < BATCH_HEADER:
            raise ValueError(f"a record batch is at least {BATCH_HEADER} bytes, got {len(data)}")
        self._data = data
        self._state = (-1, -1, -1)  # a producer that is not idempotent sets none
        self._built: bytearray | None = None

    def record_count(self) -> int:
        return sequence_span(self._data)

    def size(self) -> int:
        return len(self._data)

    def closed(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def _set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int
    ) -> None:
        self._state = (producer_id, producer_epoch, base_sequence)

    def _build(self) -> bytearray:
        if self._built is None:
            self._built = producer_owned(self._data, *self._state)
        return self._built


def whole_batches(tp: TopicPartition, items: Sequence[Any]) -> list[RawBatch]:
    """A fetched partition's items, each a whole batch; anything else (a batch the hook hands
    out decoded: LogAppendTime, magic < 2, across the fetch position; a damaged one) stops the
    copy, saying which: nothing is skipped."""
    for item in items:
        if type(item) is not RawBatch:
            raise SystemExit(
                f"rawcopy copies whole batches only: {tp.topic}/{tp.partition} gave "
                f"{type(item).__name__} at offset {getattr(item, 'offset', '?')}"
            )
    return list(items)


async def _send(
    producer: AIOKafkaProducer, tp: TopicPartition, batches: list[RawBatch]
) -> list[Any]:
    """Queue ``batches`` in order (each waits for the partition's previous one to be taken)."""
    return [
        await producer.send_batch(WholeBatch(b.data), tp.topic, partition=tp.partition)
        for b in batches
    ]


async def copy(args: argparse.Namespace, stop: asyncio.Event) -> int:
    """Copy until ``stop``; return the batches copied (acknowledged)."""
    fetched.install()
    switch = LeanRecords()
    switch.raw = True  # every eligible batch handed out whole
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.source, key_deserializer=switch, group_id=None,
        enable_auto_commit=False, auto_offset_reset="earliest", isolation_level="read_committed",
        max_poll_records=args.max_poll_records, fetch_max_bytes=args.fetch_max_bytes,
        max_partition_fetch_bytes=args.max_partition_fetch_bytes,
    )  # fmt: skip
    producers = [
        AIOKafkaProducer(bootstrap_servers=args.target, acks="all", enable_idempotence=True)
        for _ in range(LANES)
    ]
    copied = 0  # batches
    async with contextlib.AsyncExitStack() as stack:
        for client in (consumer, *producers):
            await client.start()
            stack.push_async_callback(client.stop)
        consumer.subscribe([args.topic])  # no group: every partition, from the earliest
        pending: list[Any] = []
        while not stop.is_set():
            polled = await consumer.getmany(timeout_ms=500)
            rounds = [
                _send(producers[tp.partition % LANES], tp, whole_batches(tp, items))
                for tp, items in polled.items()
            ]
            for futures in await asyncio.gather(*rounds):
                pending.extend(futures)
            copied += _settled(pending)
        for producer in producers:
            await producer.flush()
        copied += _settled(pending)
    return copied


def _settled(pending: list[Any]) -> int:
    """Take the acknowledged batches out of ``pending`` (raising a failed one's error); how
    many they were."""
    done = [f for f in pending if f.done()]
    pending[:] = [f for f in pending if not f.done()]
    return sum(1 for f in done if f.result() is not None)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.rawcopy", description=__doc__)
    p.add_argument("--source", required=True, help="the source's bootstrap servers")
    p.add_argument("--target", required=True, help="the target's (the topic exists there)")
    p.add_argument("--topic", required=True)
    p.add_argument("--max-poll-records", type=int, default=5000)
    p.add_argument("--fetch-max-bytes", type=int, default=64 * 1024 * 1024)
    p.add_argument("--max-partition-fetch-bytes", type=int, default=4 * 1024 * 1024)
    return p


async def _main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    copied = await copy(args, stop)
    print(f"rawcopy: {copied} batches acknowledged", flush=True)


def main(argv: list[str] | None = None) -> None:
    if _helper is None:
        sys.exit("rawcopy needs aa's compiled helper (aa.mirror._restamp): run `make env`")
    asyncio.run(_main(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
