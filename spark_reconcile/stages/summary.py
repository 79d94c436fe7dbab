"""The summary stage: summary.json's content (small aggregates and samples only) from the
findings one run wrote."""

from __future__ import annotations

from typing import Any

from aa.logs import get_logger
from spark_reconcile.findings.divergent import COUNTED
from spark_reconcile.findings.missing import EXPIRED, IN_FLIGHT
from spark_reconcile.options import JobOptions
from spark_reconcile.probe import Probe
from spark_reconcile.stages.find import Found
from spark_reconcile.stages.scope import RunScope
from spark_reconcile.summarise import (
    SAMPLE,
    absent_by_flow,
    counts_by,
    counts_by_completeness,
    iso,
    missing_by_flow_and_bucket,
    sample,
    to_jsonable,
)
from spark_reconcile.thresholds import COUNT_FINDINGS
from spark_reconcile.window import Window


def summary_of(
    found: Found, scope: RunScope, window: Window, probed: Probe, opts: JobOptions
) -> dict[str, Any]:
    """summary.json's content: counts, thresholds, samples, charts and the outputs' paths."""
    written, empty, stats = found.written, found.empty, found.stats
    out = opts.out / "findings"
    # rows: a sample under SAMPLE rows is all of them, divergent's from its counts per reason
    samples = {
        name: [] if empty.get(name) else to_jsonable(sample(written[name], "headers", "value"))
        for name in COUNT_FINDINGS
    }
    by_reason = {r["reason"]: r["count"] for r in counts_by(written["divergent"], "reason")}
    rows = {
        name: len(samples[name]) if len(samples[name]) < SAMPLE else int(written[name].count())
        for name in COUNT_FINDINGS
        if name != "divergent"
    } | {"divergent": sum(by_reason.values())}
    for name in written:
        if name != "absent":
            get_logger("spark_reconcile").info(
                "reconcile.finding", finding=name, rows=rows.get(name), path=str(out / name)
            )
    counts = {name: rows[name] for name in COUNT_FINDINGS}
    counts["divergent"] = sum(n for reason, n in by_reason.items() if reason in COUNTED)
    delay_rows = to_jsonable(stats.delay)
    p99 = {f"{r['flow']} {r['ltopic']}": float(r["p99_ms"]) for r in delay_rows}
    # missing per flow and per bucket, in flight and expired per flow: one query each pair
    # (every query costs planning and codegen)
    missing_by_flow, missing_buckets = (
        ([], {}) if empty["missing"] else missing_by_flow_and_bucket(written["missing"])
    )
    absent_per_flow = {} if empty["absent"] else absent_by_flow(written["absent"])
    delay_buckets: dict[str, dict[str, float]] = {}
    for r in stats.delay_buckets:
        delay_buckets.setdefault(r["flow"], {})[str(r["bucket"])] = float(r["p99_ms"])
    completeness_rows = (
        []
        if empty["completeness"]
        else to_jsonable(counts_by_completeness(written["completeness"]))
    )
    return {
        "window": {
            "since": iso(window.since_ms),
            "until": iso(window.until_ms),
            "since_ms": window.since_ms,
            "until_ms": window.until_ms,
            "slack_ms": window.slack_ms,
            "grace_ms": opts.grace_ms,
            "probed_at": iso(probed.at_ms),
        },
        "dcs": list(scope.dcs),
        "checked": scope.checked,
        "not_checked": [
            {"dc": dc, "reason": reason} for dc, reason in sorted(probed.unreachable.items())
        ],
        "topics": scope.logical,
        "event_topics": scope.resolvers,
        "counts": counts,
        "thresholds": dict(opts.thresholds.limits),
        "thresholds_crossed": opts.thresholds.crossed(counts, p99),
        "records": to_jsonable(stats.records),
        "missing_by_flow": to_jsonable(missing_by_flow),
        "in_flight": absent_per_flow.get(IN_FLIGHT, []),
        "expired": absent_per_flow.get(EXPIRED, []),
        "divergent_by_reason": by_reason,
        "delay": delay_rows,
        "delay_unmeasured": to_jsonable(stats.unmeasured),
        "completeness": completeness_rows,
        "charts": {"missing_per_bucket": missing_buckets, "delay_p99_per_bucket": delay_buckets},
        "samples": samples,
        "outputs": {name: str(out / name) for name in written},
    }
