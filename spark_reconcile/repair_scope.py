"""What a repair re-publishes, chosen before the repair runs: the missing records with their
origin payload, only the first DC lacking a record on each branch of its origin's route tree
(the mirrors carry the copy on), never an older value after a newer one on a compacted topic,
and, once Spark is done, not what reached its target since the probe."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import functions as F

from aa.logs import get_logger
from spark_reconcile.findings.missing import EXPIRED
from spark_reconcile.frames import literal_frame
from spark_reconcile.options import JobOptions
from spark_reconcile.plan import ReadPlan
from spark_reconcile.probe import Probe, probe
from spark_reconcile.ranges import PartitionRange
from spark_reconcile.records import decode_slow, finish, prepare
from spark_reconcile.source import read_dcs
from spark_reconcile.window import Window


def partition_counts(ranges: Sequence[PartitionRange]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for r in ranges:
        out[(r.dc, r.topic)] = max(out.get((r.dc, r.topic), 0), r.partition + 1)
    return out


def with_payload(rows: Any, with_values: Callable[[Any], Any], *, empty: bool = False) -> Any:
    """Missing rows with the origin record's ``key``, ``value`` and ``headers`` (for repair),
    read back from the origin DC for these offsets only. ``empty``: ``rows`` are known to be
    empty (no query to find out)."""
    if empty or rows.isEmpty():
        return rows.select(
            "*",
            F.lit(None).cast("binary").alias("key"),
            F.lit(None).cast("binary").alias("value"),
            F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"),
        )
    return (
        with_values(rows.withColumn("dc", F.col("origin")))
        .drop("dc")
        .withColumnRenamed("record_key", "key")
    )


def first_on_branch(missing: Any, absent: Any) -> Any:
    """``missing`` rows whose parent DC (on the origin's route tree) holds the record: the
    first DC lacking it on each branch. The mirrors carry the repaired copy on to the DCs below
    it, so a chain ends with one copy per DC."""
    upstream = absent.filter(F.col("status") != EXPIRED).select(
        F.col("target").alias("parent"), "origin", "ltopic", "rid"
    )
    return missing.join(upstream, ["parent", "origin", "ltopic", "rid"], "left_anti")


def not_older_than_target(
    spark: Any, records: Any, all_ranges: Sequence[PartitionRange]
) -> Callable[[Any], Any]:
    """On compacted topics, never re-append an older value after a newer one: drop repair rows
    whose target already holds a record with the same key and a later timestamp."""
    compacted = sorted({(r.dc, r.topic) for r in all_ranges if r.compacted})

    def transform(todo: Any) -> Any:
        if not compacted:
            return todo
        cut = literal_frame(spark, compacted, "target string, t_topic string")
        newer = records.join(
            F.broadcast(cut), (records.dc == cut.target) & (records.topic == cut.t_topic)
        ).select("target", "ltopic", "key_hash", F.col("ts").alias("newer_ts"))
        stale = (
            todo.join(newer, ["target", "ltopic", "key_hash"])
            .filter(F.col("newer_ts") > F.col("ts"))
            .select("target", "ltopic", "rid")
        )
        return todo.join(stale, ["target", "ltopic", "rid"], "left_anti")

    return transform


def recheck(
    spark: Any, plan: ReadPlan, window: Window, probed: Probe, todo: Any, opts: JobOptions
) -> Any:
    """``todo`` without the records whose copy reached their target since the probe (the
    mirror caught up while Spark ran): the targets are probed again and only what arrived
    after the first probe's end offsets is read."""
    again = asyncio.run(probe(plan, window, None, opts.connect_timeout_s))
    ends = {(r.dc, r.topic, r.partition): r.end for r in probed.all_ranges()}
    targets = {r.target for r in todo.select("target").distinct().collect()}
    arrived = {
        dc: [
            replace(r, start=ends[(r.dc, r.topic, r.partition)])
            for r in rs
            if (r.dc, r.topic, r.partition) in ends
        ]
        for dc, rs in again.ranges.items()
        if dc in targets
    }
    resolvers = {
        r.logical: res
        for rs in arrived.values()
        for r in rs
        if (res := plan.events.resolver_for(r.logical)) is not None
    }
    datacenters = {dc: plan.datacenter(dc) for dc in plan.dcs}
    late = (
        read_dcs(spark, datacenters, arrived)
        .transform(prepare(resolvers))
        .transform(decode_slow("ev_value", "ev_headers"))
        .transform(finish(window, opts.bucket_ms))
        .select(F.col("dc").alias("target"), "ltopic", "rid", "src", "event_error")
    )
    n_late = late.count()
    if not n_late:
        return todo
    get_logger("spark_reconcile").info("reconcile.recheck", records_arrived=n_late)
    return todo.join(
        late.select("target", "ltopic", "rid"), ["target", "ltopic", "rid"], "left_anti"
    ).join(
        late.filter(F.col("event_error").isNotNull()).select("target", "ltopic", "src"),
        ["target", "ltopic", "src"],
        "left_anti",
    )
