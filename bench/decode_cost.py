"""``python -m bench.decode_cost [--marks] [--local] [--forwarder] [--framed] [--profile]``: the
hot path of one headers-mode flow in a 3-DC full mesh, offline (no broker): decode a fetched
partition, route it, append the forwarded records to a batch. Prints microseconds per record read.

The partition holds 300 record batches of 50 records of 512 B, in turn written by an
application in SF, by the NYC->SF mirror and by the LON->SF mirror, so the flow SF->NYC forwards
a third of what it reads. ``--marks`` gives the mirrors' batches their ``aa-batch`` mark and the
flow its batch skipper (:mod:`aa.kafka.fetched`), as ``aa run`` does; ``--framed`` frames every
value for a schema registry (magic byte 0, schema id 1) and has the flow translate the ids, its
table knowing id 1 already (no registry asked: the per-record cost only); ``--profile`` adds a
cProfile table.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import struct
import time
from collections.abc import Callable
from typing import Any

from aiokafka.structs import TopicPartition

from aa.config import read_yaml
from aa.config.registries import SchemaTranslation
from aa.kafka import fetched, switch
from aa.kafka.builders import RawBuilder
from aa.kafka.producers import BatchBuilder
from aa.kafka.records import batch_builder
from aa.logs import get_logger
from aa.mirror import restamp
from aa.mirror.context import StageContext
from aa.mirror.delivery import AtLeastOnce, FlowClients
from aa.mirror.limits import TargetLimits
from aa.mirror.route import Forwarder, known_schemas
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from aa.policy import FlowRouter
from aa.provenance import MIRRORED_AT, LocalStamp, batch_mark
from aa.schemas.translator import SchemaTranslator
from aa.schemas.wire import HEADER, header

TOPOLOGY = """
datacenters:
  SF: {bootstrap: "127.0.0.1:1"}
  NYC: {bootstrap: "127.0.0.1:2"}
  LON: {bootstrap: "127.0.0.1:3"}
flows: full-mesh
topics: ["t"]
"""
TP = TopicPartition("t", 0)
APP_PID, MIRROR_PID = 7, 99


def partition_blob(
    batches_n: int, per_batch: int, marks: bool, local: bool = False, framed: bool = False
) -> bytes:
    stamps = {dc: LocalStamp(dc, "SF", "t", 0) for dc in ("NYC", "LON")}
    out, offset = bytearray(), 0
    for b in range(batches_n):
        writer = "SF" if local else ("SF", "NYC", "LON")[b % 3]
        pid = APP_PID if writer == "SF" else MIRROR_PID
        builder = batch_builder(pid, offset)
        for i in range(per_batch):
            headers: list[tuple[str, bytes]] = []
            if writer != "SF":
                headers = [*stamps[writer].headers(offset + i, []), (MIRRORED_AT, b"1")]
                if marks and i == 0:
                    headers.append(batch_mark("SF", MIRROR_PID))
            value = header(1) + b"v" * (512 - HEADER) if framed else b"v" * 512
            builder.append(i, timestamp=1_700_000_000_000, key=None, value=value,
                           headers=headers)  # fmt: skip
        raw = builder.build()
        raw[0:8] = struct.pack(">q", offset)  # the base offset, as a broker sets it
        out += raw
        offset += per_batch
    return bytes(out)


class _Placement:
    """The target topic exists, with a 4.x broker's default limits; same partitions."""

    def __init__(self) -> None:
        cfg = {"max.message.bytes": "1048588", "message.timestamp.after.max.ms": "3600000"}
        self.limits = {"t": TargetLimits.from_configs("t", cfg)}

    async def target_topic(self, topic: str) -> str:
        return topic

    def refuses(self, target: str) -> bool:
        return False

    async def place(self, tp: TopicPartition, target: str) -> tuple[int, bool]:
        return 1, True


class _Target:
    """Builds 512 KiB batches (the default ``tuning.batch_size``); a submit is acked at once."""

    def __init__(self) -> None:
        self.marks = [[batch_mark("NYC", MIRROR_PID)]]

    def codec(self, source: Any) -> int:
        return 0

    def new_batch(self, limits: Any, codec: int) -> BatchBuilder:
        return BatchBuilder(512 * 1024, codec)

    def new_raw_batch(self, limits: Any, codec: int) -> BatchBuilder:
        return RawBuilder(512 * 1024, codec, is_transactional=False)

    def lane(self, topic: str, partition: int, wide: bool) -> int:
        return 0

    async def submit(
        self, builder: Any, topic: str, partition: int, lane: int = 0
    ) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def _forwarder(router: FlowRouter, schemas: SchemaTranslator | None = None) -> Forwarder:
    settings = FlowSettings("SF", "NYC", {}, {}, "g")
    clients = FlowClients(None, None, None, None, get_logger("bench.decode_cost"))  # type: ignore[arg-type]
    ctx = StageContext(settings, router, Metrics(), AtLeastOnce(settings), clients, schemas)
    return Forwarder(ctx, _Placement(), _Target(), lambda tp, offset: None)  # type: ignore[arg-type]


def _translator() -> SchemaTranslator:
    """A flow's translator whose table knows id 1 (-> 4): resolving asks no registry."""
    schemas = SchemaTranslation("http://127.0.0.1:1", "http://127.0.0.1:2")
    settings = FlowSettings("SF", "NYC", {}, {}, "g", schemas=schemas)
    log = get_logger("bench.decode_cost")
    translator = SchemaTranslator(settings, None, Metrics(), log)  # type: ignore[arg-type]
    translator.table.headers[header(1)] = header(4)
    return translator


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.decode_cost", description=__doc__)
    p.add_argument("--marks", action="store_true", help="mirror batches marked, flow skips them")
    p.add_argument("--profile", action="store_true")
    p.add_argument(
        "--local", action="store_true", help="W1's shape: every record written in SF, forwarded"
    )
    p.add_argument(
        "--forwarder",
        action="store_true",
        help="route and append through the flow's own Forwarder (target limits screened, "
        "batches per target partition) with an in-memory target, as aa run does",
    )
    p.add_argument(
        "--framed",
        action="store_true",
        help="values framed for a schema registry, their ids translated (with --forwarder)",
    )
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    topology = read_yaml(TOPOLOGY)
    flow = next(f for f in topology.flows if (f.source, f.target) == ("SF", "NYC"))
    router = FlowRouter(topology, flow)
    blob = partition_blob(300, 50, args.marks, args.local, args.framed)
    reads = 300 * 50
    fetched.install()

    lean = getattr(fetched, "LeanRecords", None)  # the flow's consumer decodes lean

    raw = args.forwarder and restamp.enabled()  # as aa run: AA_PURE_PYTHON=1 turns it off

    def decode() -> list[Any]:
        skipper = switch.BatchSkipper("SF") if args.marks else (lean() if lean else None)
        if skipper is not None:
            skipper.raw = raw
        return fetched.partition_records(TP, blob, skipper)

    def copy() -> int:
        records = decode()
        stamp = [(MIRRORED_AT, b"1700000000001")]
        out = BatchBuilder(1 << 30, 0)
        n = 0
        for r, route in zip(records, router.route_batch("t", 0, records), strict=True):
            if type(route) is list:
                route.extend(stamp)
                out.append(timestamp=r.timestamp, key=r.key, value=r.value, headers=route)
                n += 1
        return n

    translator = _translator() if args.framed else None
    forwarder = _forwarder(router, translator)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def forward() -> int:
        batch = {TP: decode()}
        if translator is not None:  # as the flow does before it routes a fetch
            loop.run_until_complete(known_schemas(translator, batch, stop))
        pending = loop.run_until_complete(forwarder.forward(batch))
        return sum(pending.copied.values())

    if args.forwarder:
        copy = forward  # the flow's own path instead of the simplified loop

    def per_read(fn: Callable[[], object]) -> float:
        start = time.process_time()  # CPU, not wall: the machine is shared
        for _ in range(args.repeat):
            fn()
        return float((time.process_time() - start) / args.repeat / reads * 1e6)

    marked = "marked" if args.marks else "unmarked"
    path = "batch path (aa.mirror.restamp)" if raw and not args.framed else "record path"
    if args.framed:
        path += ", schema ids translated"
    print(f"forwarded {copy()} of {reads} records read ({marked}, {path})")
    print(f"decode: {per_read(decode):.2f} us CPU per record read")
    print(f"decode + route + append: {per_read(copy):.2f} us CPU per record read")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(lambda: [copy() for _ in range(5)])
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
