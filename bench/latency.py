"""End-to-end latency probe: ``python -m bench.latency`` reads a topic from its current end and
records, per record, arrival time minus the record's (origin CreateTime) timestamp.

It runs in its own process so the harness's polling does not delay it; it touches a ready file
once positioned, and writes percentiles as JSON when ``--count`` records arrived (or at the
deadline, with what it got).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from array import array
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.admin import ClusterAdmin


def percentiles(values: array[int]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    ordered = sorted(values)

    def pct(p: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))])

    return {
        "count": len(ordered),
        "p50_ms": pct(50),
        "p90_ms": pct(90),
        "p99_ms": pct(99),
        "p999_ms": pct(99.9),
        "max_ms": float(ordered[-1]),
        "mean_ms": sum(ordered) / len(ordered),
    }


async def probe(
    bootstrap: str, topic: str, count: int, timeout_s: float, ready: Path, skip_s: float = 0.0
) -> dict[str, float]:
    """Latencies of ``count`` records; the first ``skip_s`` seconds of them (by origin
    timestamp) are read but left out of the figures: JIT and connection warm-up, not steady."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + 30
        async with ClusterAdmin("bench", bootstrap_servers=bootstrap) as admin:
            while (info := (await admin.topics()).get(topic)) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"topic {topic} not found on {bootstrap}")
                await asyncio.sleep(0.2)
        tps = [TopicPartition(topic, p) for p in range(info.partitions)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        for tp in tps:
            await consumer.position(tp)
        ready.touch()  # noqa: ASYNC240 - one tiny file, once
        latencies: array[int] = array("q")
        seen, since = 0, None
        deadline = time.monotonic() + timeout_s
        while seen < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200, max_records=10000)
            now_ms = time.time_ns() // 1_000_000
            for records in batches.values():
                if since is None and records:
                    since = records[0].timestamp + int(skip_s * 1000)
                seen += len(records)
                latencies.extend(now_ms - r.timestamp for r in records if r.timestamp >= since)
        return {**percentiles(latencies), "received": seen, "skipped_warmup_s": skip_s}
    finally:
        await consumer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--ready", type=Path, required=True)
    parser.add_argument("--skip-s", type=float, default=0.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    result = asyncio.run(
        probe(args.bootstrap, args.topic, args.count, args.timeout, args.ready, args.skip_s)
    )
    args.out.write_bytes(orjson.dumps(result))


if __name__ == "__main__":
    main()
