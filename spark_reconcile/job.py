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
from spark_reconcile import jvm_cache
from spark_reconcile.events import known_resolvers
from spark_reconcile.options import JobOptions, add_arguments, from_args
from spark_reconcile.plan import ReadPlan
from spark_reconcile.probe import Probe, probe
from spark_reconcile.repair import repair
from spark_reconcile.repair_scope import partition_counts, recheck
from spark_reconcile.report import render_html
from spark_reconcile.session import build_session, finish_session
from spark_reconcile.source import read_dcs
from spark_reconcile.stages.find import find
from spark_reconcile.stages.read import min_partitions, read_records, work_dir
from spark_reconcile.stages.scope import RunScope
from spark_reconcile.stages.summary import summary_of
from spark_reconcile.state import RunState, load_state, save_state
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
            shutil.rmtree(work_dir(opts.out), ignore_errors=True)
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
    scope = RunScope.of(plan, probed)
    _log().info(
        "reconcile.stage", stage="read", topics=scope.logical, event_topics=sorted(scope.resolvers)
    )
    split = min_partitions(spark, probed.all_ranges())
    raw = read_dcs(spark, scope.datacenters, probed.ranges, min_partitions=split)
    work = work_dir(opts.out)
    stored = read_records(spark, raw, scope, window, opts.bucket_ms, work)
    found = find(spark, stored, scope, probed, opts, work)
    return summary_of(found, scope, window, probed, opts)


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
