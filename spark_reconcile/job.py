"""The reconciliation job: wiring only (probe, read, normalise, findings, write, repair).

Runs as ``aa reconcile ...`` or unchanged under Spark:
``spark-submit --jars ... -m``-style via ``python -m spark_reconcile.job --config ...`` (see
docs/reconcile.md). Exit codes: 0 within thresholds, 1 thresholds crossed, 2 error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from aa.config import load_config
from aa.errors import AaError
from aa.logs import configure, get_logger
from spark_reconcile import findings
from spark_reconcile.findings.delay import unmeasured
from spark_reconcile.options import JobOptions, add_arguments, from_args
from spark_reconcile.plan import ReadPlan
from spark_reconcile.probe import PartitionRange, probe
from spark_reconcile.records import normalise
from spark_reconcile.repair import repair
from spark_reconcile.report import render_html
from spark_reconcile.session import build_session
from spark_reconcile.source import read_dcs
from spark_reconcile.state import RunState, load_state, save_state
from spark_reconcile.summarise import counts_by, record_counts, sample, to_jsonable
from spark_reconcile.thresholds import COUNT_FINDINGS
from spark_reconcile.window import Window, parse_time


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
    """One run; returns 0 (within thresholds) or 1 (crossed). Raises ``AaError`` on errors."""
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
    ranges = asyncio.run(probe(plan, window, state, opts.connect_timeout_s))
    all_ranges = [r for rs in ranges.values() for r in rs]
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
    )
    summary = reconcile(spark, plan, window, ranges, opts)
    if opts.repair and summary["counts"]["missing"]:
        _log().info("reconcile.stage", stage="repair", records=summary["counts"]["missing"])
        partitions = _partition_counts(all_ranges)
        missing_df = spark.read.parquet(str(opts.out / "findings" / "missing"))
        done = repair(missing_df, plan, partitions)
        summary["repair"] = [{"target": k, "published": v} for k, v in sorted(done.items())]
    _write_outputs(opts.out, summary)
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


def _partition_counts(ranges: Sequence[PartitionRange]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for r in ranges:
        out[(r.dc, r.topic)] = max(out.get((r.dc, r.topic), 0), r.partition + 1)
    return out


def reconcile(
    spark: Any,
    plan: ReadPlan,
    window: Window,
    ranges: dict[str, list[PartitionRange]],
    opts: JobOptions,
) -> dict[str, Any]:
    """Read, find, write Parquet; return the summary (small aggregates only)."""
    logical = sorted({r.logical for rs in ranges.values() for r in rs})
    resolvers = {t: res for t in logical if (res := plan.events.resolver_for(t)) is not None}
    datacenters = {dc: plan.datacenter(dc) for dc in plan.dcs}
    _log().info("reconcile.stage", stage="read", topics=logical, event_topics=sorted(resolvers))
    records = (
        read_dcs(spark, datacenters, ranges)
        .transform(normalise(window, opts.bucket_ms, resolvers))
        .persist()
    )
    expected = spark.createDataFrame(
        plan.expected(logical) or [], "origin string, ltopic string, target string"
    )
    topic_dcs = {t: dcs for t, dcs in plan.topic_dcs(logical).items() if t in resolvers}
    tables = {
        "missing": records.transform(findings.missing(expected)),
        "duplicated": records.transform(findings.duplicated),
        "looped": records.transform(findings.looped),
        "malformed": records.transform(findings.malformed),
        "divergent": findings.key_states(records).transform(findings.divergent(topic_dcs)),
        "delay": records.transform(findings.delay_by_flow),
        "completeness": records.transform(findings.completeness(expected)),
    }
    written: dict[str, Any] = {}
    for name, df in tables.items():
        path = opts.out / "findings" / name
        df.write.mode("overwrite").parquet(str(path))
        written[name] = spark.read.parquet(str(path))
        _log().info("reconcile.finding", finding=name, rows=written[name].count(), path=str(path))
    counts = {name: int(written[name].count()) for name in COUNT_FINDINGS}
    delay_rows = to_jsonable(
        [r.asDict() for r in written["delay"].orderBy("flow", "ltopic").collect()]
    )
    p99 = {f"{r['flow']} {r['ltopic']}": float(r["p99_ms"]) for r in delay_rows}
    crossed = opts.thresholds.crossed(counts, p99)
    missing_buckets = {
        str(r["bucket"]): r["count"] for r in counts_by(written["missing"], "bucket")
    }
    delay_buckets: dict[str, dict[str, float]] = {}
    for r in records.transform(findings.delay_by_bucket()).collect():
        delay_buckets.setdefault(r.flow, {})[str(r.bucket)] = float(r.p99_ms)
    completeness_rows = to_jsonable(counts_by_completeness(written["completeness"]))
    summary: dict[str, Any] = {
        "window": {
            "since": _iso(window.since_ms),
            "until": _iso(window.until_ms),
            "since_ms": window.since_ms,
            "until_ms": window.until_ms,
            "slack_ms": window.slack_ms,
        },
        "dcs": list(plan.dcs),
        "topics": logical,
        "event_topics": resolvers,
        "counts": counts,
        "thresholds": dict(opts.thresholds.limits),
        "thresholds_crossed": crossed,
        "records": to_jsonable(record_counts(records)),
        "missing_by_flow": to_jsonable(counts_by(written["missing"], "origin", "target", "ltopic")),
        "delay": delay_rows,
        "delay_unmeasured": to_jsonable(
            [r.asDict() for r in records.transform(unmeasured).orderBy("flow").collect()]
        ),
        "completeness": completeness_rows,
        "charts": {"missing_per_bucket": missing_buckets, "delay_p99_per_bucket": delay_buckets},
        "samples": {
            name: to_jsonable(sample(written[name], "headers", "value")) for name in COUNT_FINDINGS
        },
        "outputs": {name: str(opts.out / "findings" / name) for name in tables},
    }
    records.unpersist()
    return summary


def counts_by_completeness(df: Any) -> list[dict[str, Any]]:
    """Completeness totals per topic, origin and DC (the per-bucket rows are in Parquet)."""
    from pyspark.sql import functions as F

    return [
        r.asDict()
        for r in df.groupBy("ltopic", "origin", "dc")
        .agg(
            F.sum("origin_count").alias("origin_count"),
            F.sum("count").alias("count"),
            F.sum("missing").alias("missing"),
        )
        .orderBy("ltopic", "origin", "dc")
        .collect()
    ]


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


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
        _log().error("reconcile.failed", error=repr(exc))
        print(f"aa reconcile: error: {exc!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
