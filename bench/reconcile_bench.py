"""Benchmark of the reconciliation divergence job: 3 DCs x N events each on local[2].

Each DC's copy of an event-sourced topic holds the same N events (a third written locally, the
rest copies with the mirror's provenance headers); in LON's copy, the winning (last) event of
some keys has another payload, so those keys diverge. The rows are generated inside Spark in
the raw Kafka-source shape, so the figure is the job's own cost (normalise, decode every
envelope, fold every key with the resolver, compare DCs), not Kafka's read throughput.
Wall time and the peak resident memory of the whole process tree (Python driver, JVM, Python
workers) are printed as JSON.

    .venv/bin/python -m bench.reconcile_bench --events 1000000 --events 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

from bench.procstat import Sampler

DCS = ("SF", "NYC", "LON")
T0 = 1_700_000_000_000


def raw_events(spark: Any, n: int, keys: int, divergent_every: int) -> Any:
    """3 x ``n`` rows shaped like :func:`spark_reconcile.source.read_dcs` output."""
    from pyspark.sql import functions as F

    dcs = spark.createDataFrame([(i, d) for i, d in enumerate(DCS)], "dc_i int, dc string")
    ev = spark.range(n).select(
        F.col("id").alias("i"),
        F.element_at(F.array(*[F.lit(d) for d in DCS]), (F.col("id") % 3 + 1).cast("int")).alias(
            "origin"
        ),
        F.concat(F.lit("k"), (F.col("id") % keys).cast("string")).alias("ekey"),
        (F.lit(T0) + F.col("id")).alias("ts"),
    )
    rows = ev.crossJoin(dcs)
    # the last event of a key wins (LWW): altering it in LON's copy makes that key diverge
    altered = (
        (F.col("i") >= n - keys) & (F.col("i") % divergent_every == 0) & (F.col("dc") == "LON")
    )
    payload = F.when(altered, F.lit(9)).otherwise(F.lit(1))
    # conflict's envelope: a 26-character id (digits are in its alphabet), HLC "ms:0:DC"
    value = F.format_string(
        '{"id":"%013d%013d","key":"%s","type":"set","origin":"%s","hlc":"%d:0:%s",'
        '"payload":{"v":%d,"i":%d}}',
        "ts", "i", "ekey", "origin", "ts", "origin", payload, "i",
    )  # fmt: skip
    local = F.col("dc") == F.col("origin")
    h = F.struct

    def hdr(name: str, col: Any) -> Any:
        return h(F.lit(name).alias("key"), col.cast("binary").alias("value"))

    headers = F.when(local, F.array().cast("array<struct<key:string,value:binary>>")).otherwise(
        F.array(
            hdr("aa-origin", F.col("origin")),
            hdr("aa-path", F.concat_ws(",", "origin", "dc")),
            hdr("aa-src", F.concat_ws("/", F.col("origin"), F.lit("users"), F.lit(0), "i")),
            hdr("aa-ts", (F.col("ts") + 5).cast("string")),
        )
    )
    return rows.select(
        F.col("dc"),
        F.lit("users").alias("topic"),
        F.lit("users").alias("ltopic"),
        F.lit(0).alias("partition"),
        F.col("i").alias("offset"),
        F.col("ekey").cast("binary").alias("key"),
        value.cast("binary").alias("value"),
        F.col("ts"),
        headers.alias("headers"),
    )


def run_once(spark: Any, n: int, keys: int, divergent_every: int) -> dict[str, Any]:
    from spark_reconcile import findings
    from spark_reconcile.records import normalise
    from spark_reconcile.window import Window

    window = Window(T0, T0 + n + 1, slack_ms=0)
    sampler = Sampler(os.getpid())
    started = time.monotonic()
    states = findings.key_states(
        raw_events(spark, n, keys, divergent_every).transform(
            normalise(window, 3_600_000, {"users": "lww"})
        )
    )
    out = states.transform(findings.divergent({"users": DCS})).cache()
    found = out.count()
    wall = time.monotonic() - started
    usage = sampler.stop()
    out.unpersist()
    expected = sum(1 for i in range(max(0, n - keys), n) if i % divergent_every == 0)
    return {
        "events_per_dc": n,
        "rows": 3 * n,
        "keys": keys,
        "divergent_found": found,
        "divergent_expected": expected,
        "wall_s": round(wall, 1),
        "rows_per_s": round(3 * n / wall),
        "peak_rss_mb": round(usage.peak_rss_bytes / 2**20),
        "cpu_s": round(usage.cpu_s, 1),
        "load_avg_1m": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, action="append", help="events per DC (repeatable)")
    p.add_argument("--keys", type=int, default=0, help="distinct keys (default events/10)")
    p.add_argument("--divergent-every", type=int, default=1000)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    args = p.parse_args(argv)
    from spark_reconcile.session import build_session

    spark = build_session(
        master=args.master,
        driver_memory=args.driver_memory,
        shuffle_partitions=args.shuffle_partitions,
        jars=[],
    )
    results = []
    for n in args.events or [1_000_000]:
        r = run_once(spark, n, args.keys or max(1, n // 10), args.divergent_every)
        print(json.dumps(r), flush=True)
        results.append(r)
    print(
        json.dumps(
            {
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "master": args.master,
                "driver_memory": args.driver_memory,
                "results": results,
            }
        )
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
