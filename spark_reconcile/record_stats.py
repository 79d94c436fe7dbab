"""The summary's per-record statistics from ONE scan of the records.

The replication delay per flow (a finding), the delay per flow and time bucket (the report's
chart), the record counts per DC and topic, the copies without ``aa-ts`` per flow and the
number of looped records each needed a full scan of the records file, with its own planning,
code generation and JIT. One query answers them all: a code-generated hash aggregation of the
records on what the statistics ask of each (:func:`_distinct_rows`), then, on its few rows,
the three grouping sets and their delay percentiles (:mod:`~spark_reconcile.findings.delay`:
histograms of log-scale delay buckets, not ``percentile_approx``, an object aggregation Spark
does not compile); the few result rows are collected to the driver. The same scan counts the
rows ``looped``, ``malformed`` and ``completeness`` would report or count, so that those
findings scan the records only when they have something to find (a clean night's run skips
them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.findings.delay import (
    QUANTILES,
    delay_bucket,
    is_measured,
    measured_flow,
    percentiles,
    unmeasured_flow,
)
from spark_reconcile.findings.looped import looped_in_window
from spark_reconcile.findings.malformed import is_malformed
from spark_reconcile.summarise import RECORD_COUNTS, nulls_first, record_count_columns

BY_FLOW, BY_BUCKET, BY_DC = 0, 1, 2
PERCENTILES = tuple(f"p{p}_ms" for p in QUANTILES)
"""Grouping sets: (flow, ltopic) for the delay finding, (flow, bucket) for the chart,
(dc, ltopic, unmeasured flow) for the record counts."""

DELAY_SCHEMA = (
    "flow string, ltopic string, copies long, p50_ms long, p90_ms long, p99_ms long, max_ms long"
)
"""The delay finding's columns, as :func:`~spark_reconcile.findings.delay.delay_by_flow`."""


@dataclass(frozen=True, slots=True)
class RecordStats:
    """What one scan of the records gives the summary."""

    delay: list[dict[str, Any]]
    """:func:`~spark_reconcile.findings.delay.delay_by_flow` rows, ordered by flow, ltopic."""
    delay_buckets: list[dict[str, Any]]
    """:func:`~spark_reconcile.findings.delay.delay_by_bucket` rows (flow, bucket, ...)."""
    records: list[dict[str, Any]]
    """Per DC and logical topic: ``dc, ltopic`` and :data:`~.summarise.RECORD_COUNTS`."""
    unmeasured: list[dict[str, Any]]
    """:func:`~spark_reconcile.findings.delay.unmeasured` rows (flow, copies), by flow."""
    looped: int
    """Rows the ``looped`` finding reports."""
    malformed: int
    """Rows the ``malformed`` finding reports."""
    plain: int
    """Rows ``completeness`` counts (in the window, not an event topic, good provenance)."""


def _distinct_rows(records: Any) -> Any:
    """Records in the window -> one row per distinct combination of what the statistics ask
    of a record, with ``n`` rows and the counts that need the full row: a code-generated hash
    aggregation on fixed-width buffers, the only per-record work of the scan (the flows,
    paths and loops are then derived per combination, not per record). A measured copy's
    time bucket and :func:`~.delay.delay_bucket` are part of its combination, and ``hi`` is
    the largest delay of the rows behind it."""
    measured = is_measured()
    delay = F.col("mirrored_at") - F.col("ts")
    # the job's records keep the path as the string they were stored as: no split per record
    path_s = F.col("path_s") if "path_s" in records.columns else F.concat_ws(",", "path")
    return (
        records.filter(F.col("in_window"))
        .groupBy(
            "dc",
            "ltopic",
            "origin",
            path_s.alias("path_s"),
            "has_prov",
            F.col("prov_error").isNull().alias("prov_ok"),
            F.col("mirrored_at").isNotNull().alias("has_ts"),
            F.when(measured, F.col("bucket")).alias("bucket"),
            F.when(measured, delay_bucket(delay)).alias("dbucket"),
        )
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.count_if(is_malformed()).alias("malformed"),
            # the rows ``completeness`` counts (topics that are not event-sourced)
            F.count_if(F.col("resolver").isNull() & F.col("prov_error").isNull()).alias("plain"),
            F.max(F.when(measured, delay)).alias("hi"),
        )
        # what the flow, loop and count expressions ask of these columns: whether they are set
        .select(
            "*",
            F.lit(True).alias("in_window"),
            F.when(~F.col("prov_ok"), F.lit("malformed provenance")).alias("prov_error"),
            F.when(F.col("has_ts"), F.lit(0).cast("long")).alias("mirrored_at"),
            F.split("path_s", ",").alias("path"),
        )
    )


def aggregate(records: Any) -> Any:
    """Records -> one row per group of each grouping set (``gs``: :data:`BY_FLOW`,
    :data:`BY_BUCKET`, :data:`BY_DC`).

    :func:`_distinct_rows` is the scan; its few rows are fed to up to three grouping sets (an
    explicit ``explode`` of the set numbers, so that a row only meets the sets it counts in),
    and the delay sets' percentiles are read off their histograms
    (:func:`~.delay.percentiles`), all in one query."""
    flow_m = measured_flow()
    sets = F.when(
        flow_m.isNotNull(), F.array(F.lit(BY_FLOW), F.lit(BY_BUCKET), F.lit(BY_DC))
    ).otherwise(F.array(F.lit(BY_DC)))
    rows = _distinct_rows(records).select(
        F.explode(sets).alias("gs"),
        F.coalesce(flow_m, unmeasured_flow()).alias("flow"),
        flow_m.isNotNull().alias("measured"),
        "*",
        looped_in_window().alias("looped"),
    )
    is_dc = F.col("gs") == BY_DC
    n = F.col("n")
    # a measured copy counts in BY_DC without a flow: only copies without aa-ts are named there
    key_flow = F.when(is_dc & F.col("measured"), F.lit(None)).otherwise(F.col("flow"))
    counts = (*RECORD_COUNTS[1:], "looped", "malformed", "plain")
    histogram = rows.groupBy(
        "gs",
        key_flow.alias("flow"),
        F.when(is_dc, F.col("dc")).alias("dc"),
        F.when(F.col("gs") != BY_BUCKET, F.col("ltopic")).alias("ltopic"),
        F.when(F.col("gs") == BY_BUCKET, F.col("bucket")).alias("bucket"),
        F.when(~is_dc, F.col("dbucket")).alias("dbucket"),
    ).agg(
        F.sum(n).alias("n"),
        *record_count_columns(weight=n)[1:],
        F.sum(F.when(is_dc & F.col("looped"), n).otherwise(0)).alias("looped"),
        F.sum(F.when(is_dc, F.col("malformed")).otherwise(0)).alias("malformed"),
        F.sum(F.when(is_dc, F.col("plain")).otherwise(0)).alias("plain"),
        F.max(F.when(~is_dc, F.col("hi"))).alias("hi"),
    )
    # ``copies`` (a record count) is carried as ``n_copies``: percentiles name their total so
    by = ("gs", "flow", "dc", "ltopic", "bucket")
    carried = tuple(f"n_{c}" for c in counts)
    renamed = histogram.select(
        *by, "dbucket", "n", "hi", *(F.col(c).alias(f"n_{c}") for c in counts)
    )
    return percentiles(renamed, *by, carry=carried).select(
        *by,
        F.col("copies").alias("records"),
        *(F.col(f"n_{c}").alias(c) for c in counts),
        *PERCENTILES,
        "max_ms",
    )


def record_stats(records: Any) -> RecordStats:
    """:func:`aggregate`, collected and split per grouping set."""
    rows = [r.asDict() for r in aggregate(records).collect()]

    def delays(gs: int, by: str) -> list[dict[str, Any]]:
        """The delay rows of grouping set ``gs`` (flow, ``by``, copies, quantiles, max),
        ordered by flow and ``by``."""
        out = [
            {"flow": r["flow"], by: r[by], "copies": r["records"]}
            | {c: r[c] for c in ("p50_ms", "p90_ms", "p99_ms", "max_ms")}
            for r in rows
            if r["gs"] == gs
        ]
        return sorted(out, key=lambda r: nulls_first((r["flow"], r[by])))

    per_topic: dict[tuple[str, str], dict[str, Any]] = {}
    per_flow: dict[str, int] = {}
    looped = malformed = plain = 0
    for r in (r for r in rows if r["gs"] == BY_DC):
        into = per_topic.setdefault(
            (r["dc"], r["ltopic"]),
            {"dc": r["dc"], "ltopic": r["ltopic"], **dict.fromkeys(RECORD_COUNTS, 0)},
        )
        for name in RECORD_COUNTS:
            into[name] += r[name]
        looped += r["looped"]
        malformed += r["malformed"]
        plain += r["plain"]
        if r["flow"] is not None:
            per_flow[r["flow"]] = per_flow.get(r["flow"], 0) + r["records"]
    return RecordStats(
        delay=delays(BY_FLOW, "ltopic"),
        delay_buckets=delays(BY_BUCKET, "bucket"),
        records=[per_topic[k] for k in sorted(per_topic, key=nulls_first)],
        unmeasured=[{"flow": f, "copies": n} for f, n in sorted(per_flow.items())],
        looped=looped,
        malformed=malformed,
        plain=plain,
    )
