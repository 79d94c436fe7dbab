"""Where a Spark run's wall time goes, query by query, from its event log.

Every SQL execution (one per action: a Parquet write, a ``collect``, a ``count``...) with its
start (seconds from the application's start), wall seconds, the executor CPU and run seconds
of its tasks, and the gap since the previous execution ended (negative when two ran at once).
Run the job with ``PYSPARK_SUBMIT_ARGS="--conf spark.eventLog.enabled=true --conf
spark.eventLog.dir=DIR --conf spark.eventLog.compress=false pyspark-shell"``, then
``python -m bench.spark_eventlog DIR`` (docs/benchmarks-history.md, issue 14's ninth change).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Execution:
    """One SQL execution of the log."""

    id: int
    start_s: float
    """Seconds from the application's start."""
    wall_s: float
    cpu_s: float
    """Executor CPU time of its tasks."""
    run_s: float
    """Executor run time of its tasks (CPU, waits, GC)."""
    gap_s: float
    """Seconds since the previous execution (by id) ended; negative when they overlapped."""
    call_site: str


def executions(lines: Iterable[str]) -> list[Execution]:
    """The SQL executions of an event log's JSON lines, by id."""
    started: dict[int, tuple[int, str]] = {}
    ended: dict[int, int] = {}
    stage_of: dict[int, int | None] = {}
    cpu_ns: dict[int | None, int] = {}
    run_ms: dict[int | None, int] = {}
    app_start = None
    for line in lines:
        e = json.loads(line)
        kind = e["Event"]
        if kind == "SparkListenerApplicationStart":
            app_start = e["Timestamp"]
        elif kind.endswith("SQLExecutionStart"):
            site = e.get("details", "").split("\n")[0]
            started[e["executionId"]] = (e["time"], site)
        elif kind.endswith("SQLExecutionEnd"):
            ended[e["executionId"]] = e["time"]
        elif kind == "SparkListenerJobStart":
            sql_id = e.get("Properties", {}).get("spark.sql.execution.id")
            for stage in e["Stage IDs"]:
                stage_of[stage] = None if sql_id is None else int(sql_id)
        elif kind == "SparkListenerTaskEnd":
            metrics = e.get("Task Metrics") or {}
            owner = stage_of.get(e["Stage ID"])
            cpu_ns[owner] = cpu_ns.get(owner, 0) + metrics.get("Executor CPU Time", 0)
            run_ms[owner] = run_ms.get(owner, 0) + metrics.get("Executor Run Time", 0)
    origin = (
        app_start if app_start is not None else min((t for t, _ in started.values()), default=0)
    )
    out: list[Execution] = []
    previous_end = None
    for sql_id in sorted(started):
        at, site = started[sql_id]
        end = ended.get(sql_id, at)
        out.append(
            Execution(
                id=sql_id,
                start_s=(at - origin) / 1000,
                wall_s=(end - at) / 1000,
                cpu_s=cpu_ns.get(sql_id, 0) / 1e9,
                run_s=run_ms.get(sql_id, 0) / 1000,
                gap_s=0.0 if previous_end is None else (at - previous_end) / 1000,
                call_site=site,
            )
        )
        previous_end = end
    return out


def _log_file(path: Path) -> Path:
    """The event log itself: ``path``, or the one file of a log folder Spark wrote in it."""
    if path.is_file():
        return path
    found = sorted(p for p in path.rglob("*") if p.is_file() and "appstatus" not in p.name)
    if not found:
        raise SystemExit(f"no event log under {path}")
    return found[0]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", type=Path, help="an event log, or the folder it was written into")
    args = p.parse_args(argv)
    with _log_file(args.path).open(encoding="utf-8") as f:
        rows = executions(f)
    head = ("start s", "gap s", "wall s", "cpu s", "run s")
    print(f"{'id':>3} {head[0]:>8} " + " ".join(f"{h:>7}" for h in head[1:]) + "  call site")
    for r in rows:
        print(
            f"{r.id:>3} {r.start_s:>8.1f} {r.gap_s:>7.2f} {r.wall_s:>7.2f} {r.cpu_s:>7.2f}"
            f" {r.run_s:>7.2f}  {r.call_site}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
