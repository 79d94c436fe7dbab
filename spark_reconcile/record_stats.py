"""The summary's per-record statistics from ONE scan of the records.

The replication delay per flow (a finding), the delay per flow and time bucket (the report's
chart), the record counts per DC and topic, the copies without ``aa-ts`` per flow and the
number of looped records each needed a full scan of the records file, with its own planning,
code generation and JIT. One aggregation answers them all: every row is fed to up to three
grouping sets (an explicit ``explode`` of the set numbers, so that a row only meets the sets it
counts in: a copy without ``aa-ts`` never reaches a percentile buffer), and the few result
rows are collected to the driver. The same scan counts the rows ``looped``, ``malformed`` and
``completeness`` would report or count, so that those findings scan the records only when
they have something to find (a clean night's run skips them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spark_reconcile.findings.delay import ACCURACY, QUANTILES, measured_flow, unmeasured_flow
from spark_reconcile.findings.looped import looped_in_window
from spark_reconcile.findings.malformed import is_malformed
from spark_reconcile.summarise import RECORD_COUNTS, nulls_first, record_count_columns

BY_FLOW, BY_BUCKET, BY_DC = 0, 1, 2
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


def aggregate(records: Any) -> Any:
    """Records -> one row per group of each grouping set (``gs``: :data:`BY_FLOW`,
    :data:`BY_BUCKET`, :data:`BY_DC`)."""
    from pyspark.sql import functions as F

    w = records.filter(F.col("in_window"))
    flow_m = measured_flow()
    delay = F.col("mirrored_at") - F.col("ts")
    sets = F.when(
        flow_m.isNotNull(), F.array(F.lit(BY_FLOW), F.lit(BY_BUCKET), F.lit(BY_DC))
    ).otherwise(F.array(F.lit(BY_DC)))
    rows = w.select(
        F.explode(sets).alias("gs"),
        F.coalesce(flow_m, unmeasured_flow()).alias("flow"),
        flow_m.isNotNull().alias("measured"),
        "dc",
        "ltopic",
        "bucket",
        "has_prov",
        "mirrored_at",
        delay.alias("delay_ms"),
        looped_in_window().alias("looped"),
        is_malformed().alias("malformed"),
        # the rows ``completeness`` counts (topics that are not event-sourced)
        (F.col("resolver").isNull() & F.col("prov_error").isNull()).alias("plain"),
    )
    is_dc = F.col("gs") == BY_DC
    # a measured copy counts in BY_DC without a flow: only copies without aa-ts are named there
    key_flow = F.when(is_dc & F.col("measured"), F.lit(None)).otherwise(F.col("flow"))
    # the percentile buffers see only the delay sets' rows
    q = F.percentile_approx(F.when(~is_dc, F.col("delay_ms")), list(QUANTILES), ACCURACY)
    return (
        rows.select(
            "gs",
            key_flow.alias("flow"),
            F.when(is_dc, F.col("dc")).alias("dc"),
            F.when(F.col("gs") != BY_BUCKET, F.col("ltopic")).alias("ltopic"),
            F.when(F.col("gs") == BY_BUCKET, F.col("bucket")).alias("bucket"),
            "has_prov",
            "mirrored_at",
            "delay_ms",
            "looped",
            "malformed",
            "plain",
        )
        .groupBy("gs", "flow", "dc", "ltopic", "bucket")
        .agg(
            *record_count_columns(),
            F.count_if(is_dc & F.col("looped")).alias("looped"),
            F.count_if(is_dc & F.col("malformed")).alias("malformed"),
            F.count_if(is_dc & F.col("plain")).alias("plain"),
            q.getItem(0).alias("p50_ms"),
            q.getItem(1).alias("p90_ms"),
            q.getItem(2).alias("p99_ms"),
            F.max(F.when(~is_dc, F.col("delay_ms"))).alias("max_ms"),
        )
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
