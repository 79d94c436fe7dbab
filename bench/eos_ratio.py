"""``python -m bench.eos_ratio``: exactly-once catch-up throughput as a ratio of at-least-once.

Preloads two identical source topics in SF (``--records`` of ``--record-size`` bytes over
``--partitions``), then copies each with one `aa run --flow SF->NYC` process, one in
at-least-once and one in exactly-once mode, ``--repeat`` times alternately (a shared machine's
load then hits both alike). Throughput is records / (caught up - first copy), where "caught up"
is the flow's *committed* state reaching the source end (the source group in at-least-once, the
offsets stored on the target in exactly-once): the figure includes making the copies durable.
Prints a table and the median ratio; uses running clusters (``--bootstrap``) or starts its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
import yaml
from aiokafka import AIOKafkaProducer

from aa.config import load_config
from aa.lag import flow_lag
from bench.brokers import dedicated, parse_bootstrap
from bench.kafka import Counter, Expect, create_topics
from bench.procstat import cpu_seconds


async def preload(bootstrap: str, topics: list[str], records: int, size: int, parts: int) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_batch_size=512 * 1024
    )
    await producer.start()
    try:
        value = os.urandom(size)
        for topic in topics:
            for p in range(parts):
                n = records // parts + (1 if p < records % parts else 0)
                batch = producer.create_batch()
                futs = []
                for i in range(n):
                    if batch.append(key=str(i).encode(), value=value, timestamp=None) is None:
                        futs.append(await producer.send_batch(batch, topic, partition=p))
                        batch = producer.create_batch()
                        batch.append(key=str(i).encode(), value=value, timestamp=None)
                futs.append(await producer.send_batch(batch, topic, partition=p))
                await asyncio.gather(*futs)
    finally:
        await producer.stop()


async def one_run(
    clusters: dict[str, str], topic: str, delivery: str, args: argparse.Namespace, work: Path
) -> dict[str, float | str]:
    tag = uuid.uuid4().hex[:6]
    a, b = f"SF{tag}", f"NYC{tag}"
    cfg = work / f"{delivery}-{tag}.yaml"
    doc = {
        "datacenters": {a: {"bootstrap": clusters["SF"]}, b: {"bootstrap": clusters["NYC"]}},
        "flows": [f"{a}->{b}"],
        "topics": [topic],
        "delivery": delivery,
        "heartbeats": {"enabled": False},
        "checkpoints": {"enabled": False},
    }
    cfg.write_text(yaml.safe_dump(doc))
    topology = load_config(cfg)
    log = (work / f"{delivery}-{tag}.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aa.cli.main",
        "run",
        "--config",
        str(cfg),
        "--flow",
        f"{a}->{b}",
        "--metrics-port",
        "0",
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
    )
    arrived = Expect(clusters["NYC"], topic, args.records)
    try:
        first = None
        deadline = time.monotonic() + args.timeout
        async with Counter([arrived]) as counter:
            while time.monotonic() < deadline:
                now = time.monotonic()
                if first is None and (await counter.counts())[arrived] > 0:
                    first = now
                if first is not None:
                    rows = await flow_lag(topology, topology.flows[0])
                    if rows and all(r.records == 0 for r in rows):
                        done = time.monotonic()
                        cpu = cpu_seconds(proc.pid)
                        break
                await asyncio.sleep(0.2)
            else:
                raise SystemExit(
                    f"{delivery}: not caught up within {args.timeout}s (see {log.name})"
                )
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 60)
        log.close()
    secs = done - first
    return {
        "delivery": delivery,
        "seconds": round(secs, 2),
        "records_per_s": round(args.records / secs),
        "mb_per_s": round(args.records * args.record_size / secs / 1e6, 1),
        "cpu_s_per_million": round(cpu / args.records * 1e6, 1),
    }


async def main_async(
    args: argparse.Namespace, clusters: dict[str, str]
) -> list[dict[str, float | str]]:
    runs = []
    with tempfile.TemporaryDirectory(prefix="aa-eos-bench-") as tmp:
        work = Path(tmp)
        # warm-up, discarded: fresh brokers create __consumer_offsets and the transaction log
        # on first use, which would otherwise land on whichever mode runs first
        for delivery in ("at-least-once", "exactly-once"):
            topic = f"bench-eos-warmup-{uuid.uuid4().hex[:8]}"
            await create_topics(clusters["SF"], [topic], args.partitions)
            await preload(clusters["SF"], [topic], 20_000, args.record_size, args.partitions)
            warm = argparse.Namespace(**{**vars(args), "records": 20_000})
            await one_run(clusters, topic, delivery, warm, work)
        for i in range(args.repeat):
            for delivery in ("at-least-once", "exactly-once"):
                topic = f"bench-eos-{delivery[:3]}-{uuid.uuid4().hex[:8]}"
                await create_topics(clusters["SF"], [topic], args.partitions)
                await preload(
                    clusters["SF"], [topic], args.records, args.record_size, args.partitions
                )
                row = await one_run(clusters, topic, delivery, args, work)
                row["run"] = i + 1
                print(orjson.dumps(row).decode(), flush=True)
                runs.append(row)
    return runs


def report(runs: list[dict[str, float | str]]) -> str:
    def med(d: str) -> float:
        return statistics.median(float(r["records_per_s"]) for r in runs if r["delivery"] == d)

    lines = ["| mode | run | records/s | MB/s | CPU s per 1M records |", "|---|---|---|---|---|"]
    for r in runs:
        lines.append(
            f"| {r['delivery']} | {r['run']} | {r['records_per_s']} | {r['mb_per_s']} | "
            f"{r['cpu_s_per_million']} |"
        )
    ratio = med("exactly-once") / med("at-least-once")
    by_run: dict[object, dict[object, float]] = {}
    for r in runs:
        by_run.setdefault(r["run"], {})[r["delivery"]] = float(r["records_per_s"])
    pairs = [d["exactly-once"] / d["at-least-once"] for d in by_run.values() if len(d) == 2]
    lines.append("")
    lines.append(f"Median exactly-once / at-least-once throughput: **{ratio:.2f}**")
    if pairs:
        each = ", ".join(f"{x:.2f}" for x in pairs)
        lines.append(f"Per run: {each} (median {statistics.median(pairs):.2f})")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.eos_ratio", description=__doc__)
    p.add_argument("--records", type=int, default=300_000)
    p.add_argument("--record-size", type=int, default=512)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--bootstrap", help="SF=host:port,NYC=host:port (default: start brokers)")
    args = p.parse_args()
    if args.bootstrap:
        runs = asyncio.run(main_async(args, parse_bootstrap(args.bootstrap)))
    else:
        with dedicated(["SF", "NYC"]) as clusters:
            runs = asyncio.run(main_async(args, clusters.bootstraps))
    print(report(runs))


if __name__ == "__main__":
    main()
