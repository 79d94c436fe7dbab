"""The reconciliation job: wiring only (probe, read, normalise, findings, write, repair).

Runs as ``aa reconcile ...`` or unchanged under Spark:
``spark-submit --jars ... -m``-style via ``python -m spark_reconcile.job --config ...`` (see
docs/reconcile.md). Exit codes: 0 within thresholds, 1 thresholds crossed, 2 error.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from aa.config import load_config
from aa.errors import AaError
from aa.logs import configure, get_logger
from spark_reconcile import findings, jvm_cache
from spark_reconcile.copies import store_records
from spark_reconcile.findings.divergent import COUNTED
from spark_reconcile.findings.missing import EXPIRED, IN_FLIGHT, MISSING
from spark_reconcile.findings.presence import Flagged, flag_dcs, flagged_only
from spark_reconcile.findings.presence import ids as presence_ids
from spark_reconcile.frames import literal_frame
from spark_reconcile.options import JobOptions, add_arguments, from_args
from spark_reconcile.picked import pick
from spark_reconcile.plan import ReadPlan
from spark_reconcile.probe import Probe, horizons_frame, mirrored_frame, probe
from spark_reconcile.record_stats import DELAY_SCHEMA, record_stats
from spark_reconcile.records import finish
from spark_reconcile.repair import repair
from spark_reconcile.repair_scope import (
    first_on_branch,
    not_older_than_target,
    partition_counts,
    recheck,
    with_payload,
)
from spark_reconcile.report import render_html
from spark_reconcile.session import build_session, finish_session
from spark_reconcile.source import read_dcs, read_positions
from spark_reconcile.state import RunState, load_state, save_state
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
from spark_reconcile.window import Window, parse_time

_UNIQUE_COLUMNS = ("offset", "ts", "vhash", "key_hash", "event_id", "event_key", "src", "ev_value")
RECORDS_PARQUET = {
    # nearly one value per row: a dictionary is built, then abandoned, for every page
    **{f"parquet.enable.dictionary#{c}": "false" for c in _UNIQUE_COLUMNS},
    # no column's min/max pays: few row groups, read whole (3-4 s of CPU at 3 x 1M)
    "parquet.column.statistics.enabled": "false",
    "parquet.size.statistics.enabled": "false",
    # a local file this run writes and removes
    "parquet.page.write-checksum.enabled": "false",
}
"""Writer options of the run's records file (Parquet's per-column options)."""
SPLIT_READS_FROM = 100_000
"""Records to read from which Spark's ``minPartitions`` splits partitions across the cores."""


def _log() -> Any:
    """The logger, bound at call time (a module-level one would keep the stderr of import)."""
    return get_logger("spark_reconcile")


def window_for(opts: JobOptions, state: RunState | None) -> Window:
    now = int(time.time() * 1000)
    until = parse_time(opts.until, now_ms=now, option="--until")
    if opts.since is not None:
        since = parse_time(opts.since, now_ms=now, option="--since")
    elif state is not None:
        since = state.until_ms
    else:
        raise AaError(
            f"--since is required on the first run (no state file at {opts.state}); "
            "for example --since 24h"
        )
    return Window(since, until, opts.slack_ms)


def run(opts: JobOptions) -> int:
    """One run; returns 0 (within thresholds), 1 (crossed) or 2 (a DC was not checked: the
    others were, and their findings are written). Raises ``AaError`` on errors."""
    started = time.monotonic()
    _check_resolvers(opts)
    plan = ReadPlan(load_config(opts.config), opts.events)
    state = load_state(opts.state)
    window = window_for(opts, state)
    _log().info(
        "reconcile.stage",
        stage="probe",
        dcs=list(plan.dcs),
        since_ms=window.since_ms,
        until_ms=window.until_ms,
    )
    probed = asyncio.run(probe(plan, window, state, opts.connect_timeout_s))
    all_ranges = probed.all_ranges()
    for dc, reason in sorted(probed.unreachable.items()):
        _log().error("reconcile.not_checked", dc=dc, reason=reason)
        print(f"aa reconcile: error: {reason}; {dc} is not checked", file=sys.stderr)
    _log().info(
        "reconcile.probed",
        partitions=len(all_ranges),
        records_to_read=sum(max(0, r.end - r.start) for r in all_ranges),
    )
    _log().info("reconcile.stage", stage="spark")
    spark = build_session(
        master=opts.master,
        driver_memory=opts.driver_memory,
        shuffle_partitions=opts.shuffle_partitions,
        jvm_cache=jvm_cache.wanted(),
    )
    try:
        try:
            summary = reconcile(spark, plan, window, probed, opts)
        finally:
            shutil.rmtree(records_dir(opts.out).parent, ignore_errors=True)
        if opts.repair and summary["counts"]["missing"]:
            _log().info("reconcile.stage", stage="repair", records=summary["counts"]["missing"])
            partitions = partition_counts(all_ranges)
            todo = spark.read.parquet(str(opts.out / "findings" / "repair"))
            done = repair(recheck(spark, plan, window, probed, todo, opts), plan, partitions)
            summary["repair"] = [{"target": k, "published": v} for k, v in sorted(done.items())]
    finally:
        finish_session(spark)  # the first run on a machine writes the JVM's AOT cache here
    _write_outputs(opts.out, summary)
    if probed.unreachable:
        code = 2  # never advance the state past a window some DC was not checked in
    else:
        save_state(opts.state, RunState.from_ranges(window.since_ms, window.until_ms, all_ranges))
        code = 1 if summary["thresholds_crossed"] else 0
    _log().info(
        "reconcile.done",
        exit_code=code,
        seconds=round(time.monotonic() - started, 1),
        out=str(opts.out),
        **summary["counts"],
    )
    return code


def _check_resolvers(opts: JobOptions) -> None:
    from spark_reconcile.events import known_resolvers

    known = known_resolvers()
    for pattern, resolver in opts.events.rules:
        if resolver not in known:
            raise AaError(
                f"--events {pattern}={resolver}: unknown resolver; use one of {', '.join(known)}"
            )


def reconcile(
    spark: Any,
    plan: ReadPlan,
    window: Window,
    probed: Probe,
    opts: JobOptions,
) -> dict[str, Any]:
    """Read, find, write Parquet; return the summary (small aggregates only)."""
    from pyspark.sql import functions as F

    ranges = probed.ranges
    all_ranges = probed.all_ranges()
    checked = sorted(ranges)
    logical = sorted({r.logical for r in all_ranges})
    physical = {r.topic: r.logical for r in all_ranges}
    resolvers = {t: res for t in logical if (res := plan.events.resolver_for(t)) is not None}
    datacenters = {dc: plan.datacenter(dc) for dc in plan.dcs}
    _log().info("reconcile.stage", stage="read", topics=logical, event_topics=sorted(resolvers))
    to_read = sum(max(0, r.end - r.start) for r in all_ranges)
    # split big partitions across the cores; small reads stay one task per partition
    split = spark.sparkContext.defaultParallelism if to_read >= SPLIT_READS_FROM else None
    raw = read_dcs(spark, datacenters, ranges, min_partitions=split)
    # One pass over Kafka: the narrow projection is decoded natively and written once as
    # Parquet on local disk (never in the JVM heap); rows the native decoder refused are
    # decoded in Python into a second, small file (copies.store_records). Mirrored copies are
    # decoded only where presence finds their bytes unlike a decoded row's; if one of those
    # fails, the records are written again with every row decoded (spark_reconcile.copies)
    records_path = records_dir(opts.out)
    flows = [
        (o, t, d, plan.routes.tree(o).get(d, o))
        for o, t, d in plan.expected(logical)
        if o in ranges and d in ranges
    ]
    expected = literal_frame(
        spark, flows, "origin string, ltopic string, target string, parent string"
    )
    topic_dcs = {
        t: [d for d in dcs if d in ranges]
        for t, dcs in plan.topic_dcs(logical).items()
        if t in resolvers
    }
    # which DCs hold each record id, and each event id's copies, from one aggregation for
    # missing, duplicated and divergent: one narrow row per flagged id or event id, then the
    # ids some DC lacks or holds twice (few, as a rule) as a small file, and the suspect keys
    expected_flows = [(o, t, d) for o, t, d, _ in flows]
    bit_dcs = flag_dcs(checked, expected_flows)
    ids_path = records_path.parent / "ids"
    for trust in (True, False):
        stored = store_records(
            spark, raw, resolvers, records_path, RECORDS_PARQUET, trust_copies=trust
        )
        with_event_values = stored.transform(finish(window, opts.bucket_ms))
        records = with_event_values.drop("ev_value", "ev_headers")
        _log().info("reconcile.stage", stage="findings", trust_copies=trust)
        records.transform(presence_ids(bit_dcs, expected_flows)).write.mode("overwrite").parquet(
            str(ids_path)
        )
        per_id = spark.read.parquet(str(ids_path))
        # divergent's suspect events and the unconfirmed copies' rows: one scan of the records
        picked = pick(with_event_values, per_id, topic_dcs, bit_dcs, ids_path.parent)
        if not trust or picked.unverified.isEmpty():
            break

    def with_values(positions: Any) -> Any:
        return read_positions(spark, datacenters, physical, positions)

    out = opts.out / "findings"
    flagged_path = records_path.parent / "flagged"
    per_id.transform(flagged_only).write.mode("overwrite").parquet(str(flagged_path))
    flagged = Flagged(bit_dcs, spark.read.parquet(str(flagged_path)))
    # delay per flow and per bucket, record counts, copies without aa-ts, and how many rows
    # looped, malformed and completeness have: one scan of the records. A finding with
    # nothing to find (no looped, malformed, lacking or maybe duplicated row) is written
    # empty without scanning the records again: a clean run's findings cost no scan each
    stats = record_stats(records)
    lacking, maybe_duplicated = flagged.rows.agg(
        F.count_if("lacking"), F.count_if("maybe_duplicated")
    ).first()

    # the findings known to be empty: written and summarised without a query of their own
    empty = {
        "absent": not lacking,
        "missing": not lacking,
        "duplicated": not maybe_duplicated,
        "looped": not stats.looped,
        "malformed": not stats.malformed,
        "completeness": not stats.plain,
    }

    def only_if(rows: int, df: Any) -> Any:
        return df if rows else df.limit(0)

    absent_path = out / "absent"
    only_if(
        lacking,
        records.transform(
            findings.absent(
                expected,
                due_ms=probed.at_ms - opts.grace_ms,
                mirrored=mirrored_frame(spark, probed),
                horizons=horizons_frame(spark, records, all_ranges=all_ranges),
                flagged=flagged,
            )
        ),
    ).write.mode("overwrite").parquet(str(absent_path))
    absent = spark.read.parquet(str(absent_path))
    missing_rows = absent.filter(F.col("status") == MISSING)
    tables = {
        "missing": with_payload(missing_rows, with_values, empty=not lacking),
        "duplicated": only_if(maybe_duplicated, findings.duplicated(records, flagged)),
        "looped": only_if(stats.looped, records.transform(findings.looped)),
        "malformed": only_if(stats.malformed, records.transform(findings.malformed)),
        "divergent": records.transform(
            findings.divergent(topic_dcs, None, suspect_events=picked.suspect_events)
        ),
        "delay": literal_frame(spark, [tuple(r.values()) for r in stats.delay], DELAY_SCHEMA),
        "completeness": only_if(
            stats.plain,
            records.transform(findings.completeness(expected.select("origin", "ltopic", "target"))),
        ),
    }
    written: dict[str, Any] = {"absent": absent}
    for name, df in tables.items():
        path = out / name
        df.write.mode("overwrite").parquet(str(path))
        written[name] = spark.read.parquet(str(path))
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
    for name in tables:
        _log().info("reconcile.finding", finding=name, rows=rows.get(name), path=str(out / name))
    if opts.repair:
        first_on_branch(written["missing"], absent).transform(
            not_older_than_target(spark, records, all_ranges)
        ).write.mode("overwrite").parquet(str(out / "repair"))
    counts = {name: rows[name] for name in COUNT_FINDINGS}
    counts["divergent"] = sum(n for reason, n in by_reason.items() if reason in COUNTED)
    delay_rows = to_jsonable(stats.delay)
    p99 = {f"{r['flow']} {r['ltopic']}": float(r["p99_ms"]) for r in delay_rows}
    crossed = opts.thresholds.crossed(counts, p99)
    # missing per flow and per bucket, in flight and expired per flow: one query each pair
    # (every query costs planning and codegen)
    missing_by_flow, missing_buckets = (
        ([], {}) if empty["missing"] else missing_by_flow_and_bucket(written["missing"])
    )
    absent_per_flow = {} if empty["absent"] else absent_by_flow(absent)
    delay_buckets: dict[str, dict[str, float]] = {}
    for r in stats.delay_buckets:
        delay_buckets.setdefault(r["flow"], {})[str(r["bucket"])] = float(r["p99_ms"])
    completeness_rows = (
        []
        if empty["completeness"]
        else to_jsonable(counts_by_completeness(written["completeness"]))
    )
    summary: dict[str, Any] = {
        "window": {
            "since": iso(window.since_ms),
            "until": iso(window.until_ms),
            "since_ms": window.since_ms,
            "until_ms": window.until_ms,
            "slack_ms": window.slack_ms,
            "grace_ms": opts.grace_ms,
            "probed_at": iso(probed.at_ms),
        },
        "dcs": list(plan.dcs),
        "checked": checked,
        "not_checked": [
            {"dc": dc, "reason": reason} for dc, reason in sorted(probed.unreachable.items())
        ],
        "topics": logical,
        "event_topics": resolvers,
        "counts": counts,
        "thresholds": dict(opts.thresholds.limits),
        "thresholds_crossed": crossed,
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
    return summary


def records_dir(out: Path) -> Path:
    """The run's normalised records (Parquet; its ``_aa_reconcile_work`` folder is removed
    when the run ends)."""
    return out / "_aa_reconcile_work" / "records"


def _write_outputs(out: Path, summary: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_bytes(
        orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    )
    (out / "report.html").write_text(render_html(summary), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m spark_reconcile.job`` (and of ``spark-submit``)."""
    parser = argparse.ArgumentParser(prog="spark_reconcile.job", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    configure()
    return run_cli(args)


def run_cli(args: argparse.Namespace) -> int:
    """Run with parsed arguments; errors become exit code 2 with a message naming the cause."""
    try:
        return run(from_args(args))
    except AaError as exc:
        _log().error("reconcile.failed", error=str(exc))
        print(f"aa reconcile: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a nightly job must exit 2, never a traceback code
        message = f"{type(exc).__name__}: {str(exc)[:2000]}"
        _log().error("reconcile.failed", error=message)
        print(f"aa reconcile: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
