"""`aa dev produce` and `aa dev consume`: write and read a few records in a local DC, to see
the mirror at work without another tool. The dev brokers never create a topic on their own
(``auto.create.topics.enable=false``, as production clusters usually are), so `produce`
creates its topic when it is missing, saying so."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from aa.admin import ClusterAdmin
from aa.dev import cluster
from aa.errors import AaError
from aa.lifecycle import started
from aa.logs import quiet_client_logs

DEFAULT_PARTITIONS = 3


def register(dsub: Any, home_option: Any) -> None:
    """Add ``produce`` and ``consume`` to the actions of `aa dev` (``home_option(p)`` adds
    ``--home`` after the action)."""
    p = dsub.add_parser("produce", help="write records KEY=VALUE to a topic of a local DC")
    p.add_argument("--dc", required=True, help="the DC to write in, e.g. SF")
    p.add_argument("--topic", required=True, help="created when missing (see --partitions)")
    p.add_argument(
        "--partitions",
        type=int,
        default=DEFAULT_PARTITIONS,
        help=f"partitions of a topic it creates (default {DEFAULT_PARTITIONS})",
    )
    p.add_argument("records", nargs="+", metavar="KEY=VALUE", help="one record each")
    home_option(p)
    p.set_defaults(func=_produce)

    c = dsub.add_parser("consume", help="print the records of a topic of a local DC")
    c.add_argument("--dc", required=True, help="the DC to read in, e.g. NYC")
    c.add_argument("--topic", required=True, help="the topic, read from the beginning")
    c.add_argument("--count", type=int, default=1, help="stop after this many records (default 1)")
    c.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for them (default 60); exit 1 if fewer arrived",
    )
    home_option(c)
    c.set_defaults(func=_consume)


def home_of(args: argparse.Namespace) -> Path:
    """The state folder of ``aa dev`` (``--home``, else ``$AA_DEV_HOME`` or the default)."""
    home: Path = args.home.expanduser() if args.home else cluster.state_root()
    return home


def _bootstrap(home: Path, dc: str) -> str:
    known = {c.name: c for c in cluster.load(home)}
    if dc not in known:
        names = ", ".join(known) or "none (run aa dev up)"
        raise AaError(f"--dc {dc}: no local cluster of that name in {home}; there are: {names}")
    return known[dc].bootstrap


def _records(raw: Sequence[str]) -> list[tuple[bytes, bytes]]:
    out = []
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AaError(f"{item!r}: write each record as KEY=VALUE, e.g. alice='{{\"book\": 1}}'")
        out.append((key.encode(), value.encode()))
    return out


def _produce(args: argparse.Namespace) -> int:
    bootstrap = _bootstrap(home_of(args), args.dc)
    records = _records(args.records)
    created = asyncio.run(_write(args.dc, bootstrap, args.topic, args.partitions, records))
    if created:
        print(f"created {args.dc}/{args.topic} ({args.partitions} partitions)")
    print(f"wrote {len(records)} record(s) to {args.dc}/{args.topic}")
    return 0


async def _write(
    dc: str, bootstrap: str, topic: str, partitions: int, records: list[tuple[bytes, bytes]]
) -> bool:
    async with ClusterAdmin(dc, bootstrap_servers=bootstrap) as admin:
        created = bool(await admin.create_topics([(topic, partitions, {})]))
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await started(producer)
    try:
        # a new topic's partitions elect their leaders first: wait; a first write retried
        # meanwhile is not news
        with quiet_client_logs():
            if created:
                await _leaders(producer, topic, partitions)
            for key, value in records:
                await producer.send_and_wait(topic, value, key)
    finally:
        await producer.stop()
    return created


async def _leaders(producer: AIOKafkaProducer, topic: str, partitions: int) -> None:
    deadline = time.monotonic() + 30
    cluster_view = producer.client.cluster
    while time.monotonic() < deadline:
        await producer.client.force_metadata_update()
        leaders = [
            cluster_view.leader_for_partition(TopicPartition(topic, p)) for p in range(partitions)
        ]
        if all(leader is not None and leader >= 0 for leader in leaders):
            return
        await asyncio.sleep(0.1)  # polling the metadata, with a deadline


def _consume(args: argparse.Namespace) -> int:
    bootstrap = _bootstrap(home_of(args), args.dc)
    got = asyncio.run(_read(bootstrap, args.topic, args.count, args.timeout))
    for line in got:
        print(line, flush=True)
    if len(got) < args.count:
        print(
            f"{len(got)} of {args.count} record(s) in {args.dc}/{args.topic} within "
            f"{args.timeout:g}s (is aa run copying into {args.dc}?)"
        )
        return 1
    return 0


def _text(raw: bytes | None) -> str:
    return "-" if raw is None else raw.decode(errors="replace")


async def _read(bootstrap: str, topic: str, count: int, timeout: float) -> list[str]:
    """Up to ``count`` records of ``topic`` from its beginning, each as one line: where it is,
    its key and value, and its headers (the aa-* headers a mirror added)."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await started(consumer)
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while len(lines) < count and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=count - len(lines))
            for records in batch.values():
                for r in records:
                    headers = " ".join(f"{k}={_text(v)}" for k, v in r.headers)
                    lines.append(
                        f"{r.topic}/{r.partition}@{r.offset} {_text(r.key)} {_text(r.value)}"
                        + (f"  {headers}" if headers else "")
                    )
    finally:
        await consumer.stop()
    return lines[:count]
