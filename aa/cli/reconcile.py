"""``aa reconcile``: the nightly PySpark job proving the DCs converged (and repairing them).

``aa`` never imports ``spark_reconcile`` at module import time (DESIGN: ``aa`` imports neither
``conflict`` nor ``spark_reconcile``); the lazy imports inside the functions below are the one
accepted exception, so ``aa run`` stays free of PySpark.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import orjson

from aa.cli.progress import working
from aa.errors import AaError
from aa.times import parse_time

DESCRIPTION = """\
Check that the DCs converged. The job reads a time window of every DC's copies of the
topics in the topology file (with Spark's Kafka source, on local[*] or under spark-submit)
and reports, per DC and topic:

  missing      records written at their origin and absent from a DC that should hold them
               (the mirror feeding that DC has moved past them, or they are older than
               --grace); records still in flight, and records a DC's retention already
               expired, are counted apart and are not missing
  duplicated   the same origin record more than once in one DC
  looped       copies that came back to their origin or passed a DC twice
  divergent    keys of event topics (--events) whose state, folded by the topic's resolver,
               differs between DCs because copies conflict; keys that differ only because
               events are absent are counted apart
  malformed    records whose aa-* headers or event payloads cannot be decoded
  delay        replication delay per flow (p50/p90/p99/max)

It writes Parquet per finding, summary.json and report.html to --out. With --repair it
re-publishes missing records to the first DC lacking them on each branch of the origin's
route (the mirrors carry them on). A DC that does not answer is marked not checked; the
others are still compared.

Exit code: 0 within thresholds, 1 thresholds crossed, 2 error or a DC not checked.
See docs/reconcile.md.
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "reconcile",
        help="find missing, duplicated, looped and divergent data across DCs (PySpark)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Lazy import (the accepted exception to the dependency rule): options only, no PySpark.
    from spark_reconcile.options import add_arguments

    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spark_reconcile.options import from_args

    # a mistyped option (a time without a zone, a bad threshold) is one line before Spark starts,
    # not a JSON log event and a second human line
    from_args(args)
    parse_time(args.until, option="--until")
    if args.since is not None:
        parse_time(args.since, option="--since")
    try:
        from spark_reconcile.job import run_cli  # lazy: PySpark is loaded only for this command
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "pyspark":
            raise
        raise AaError(
            "PySpark is not installed: pip install 'aa[spark]' to run aa reconcile"
        ) from None
    began = time.time()
    with working("reconcile: Spark reads every DC and compares (each stage is logged)"):
        code = run_cli(args)
    summary = Path(args.out) / "summary.json"
    if summary.exists() and summary.stat().st_mtime >= began:  # written by this run
        print(summary_line(orjson.loads(summary.read_bytes()), code, Path(args.out)))
    return code


OUTCOME = {0: "within thresholds", 1: "thresholds crossed", 2: "a DC was not checked"}


def summary_line(summary: dict[str, Any], code: int, out: Path) -> str:
    """One human line for stdout (the logs go to stderr): the window, each finding's count,
    the outcome and the report."""
    window = summary.get("window", {})
    counts = summary.get("counts", {})
    found = ", ".join(f"{k} {v}" for k, v in counts.items() if isinstance(v, int))
    outcome = OUTCOME.get(code, "error")
    crossed = summary.get("thresholds_crossed") or []
    why = f": {'; '.join(crossed)}" if crossed else ""
    return (
        f"reconcile {window.get('since', '?')} .. {window.get('until', '?')}: {found}; "
        f"exit {code} ({outcome}{why}); report {out / 'report.html'}"
    )
