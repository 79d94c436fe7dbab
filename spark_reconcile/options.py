"""Command-line options of the job, shared by ``aa reconcile`` and ``python -m
spark_reconcile.job`` (so both run the same thing)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from spark_reconcile.plan import EventTopics
from spark_reconcile.thresholds import Thresholds
from spark_reconcile.window import parse_duration_ms


@dataclass(frozen=True, slots=True)
class JobOptions:
    config: Path
    since: str | None
    until: str
    out: Path
    state: Path
    repair: bool
    thresholds: Thresholds
    events: EventTopics
    master: str | None
    driver_memory: str
    shuffle_partitions: int | None
    bucket_ms: int
    slack_ms: int
    grace_ms: int
    connect_timeout_s: float


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="topology file (the one the mirror uses)")
    p.add_argument(
        "--since",
        default=None,
        help="window start: ISO 8601 with a zone, epoch ms, now, or a time before now (24h, "
        "-24h, now-24h); default: where the last run stopped (the state file)",
    )
    p.add_argument(
        "--until", default="now", help="window end (exclusive), written like --since; default now"
    )
    p.add_argument("--out", default="reconcile-out", help="output folder (default reconcile-out)")
    p.add_argument("--state", default=None, help="state file (default OUT/state.json)")
    p.add_argument("--repair", action="store_true", help="re-publish missing records")
    p.add_argument(
        "--thresholds",
        default=None,
        help="NAME=N,...: tolerated missing, duplicated, looped, divergent, malformed "
        "(default 0 each) and delay_p99_ms (default unlimited)",
    )
    p.add_argument(
        "--events",
        action="append",
        default=[],
        metavar="PATTERN[=RESOLVER]",
        help="logical topics holding conflict events (regex; resolver default lww); repeatable",
    )
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument(
        "--driver-memory",
        default="768m",
        help="Spark driver memory for a local master (default 768m: the records are on disk, "
        "nothing kept grows with the data; spark-submit's own setting wins)",
    )
    p.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help="spark.sql.shuffle.partitions (default: Spark's, or spark-submit's; AQE coalesces)",
    )
    p.add_argument("--bucket", default="1h", help="time bucket of the charts (default 1h)")
    p.add_argument(
        "--slack",
        default="10m",
        help="read this much before --since: copies are not in timestamp order (default 10m)",
    )
    p.add_argument(
        "--grace",
        default="5m",
        help="a record absent from a DC is in flight, not missing, while it is younger than "
        "this at probe time and the mirror feeding that DC has not committed past it "
        "(default 5m)",
    )
    p.add_argument("--connect-timeout", type=float, default=15.0, help="seconds per DC")


def from_args(args: argparse.Namespace) -> JobOptions:
    out = Path(args.out)
    return JobOptions(
        config=Path(args.config),
        since=args.since,
        until=args.until,
        out=out,
        state=Path(args.state) if args.state else out / "state.json",
        repair=bool(args.repair),
        thresholds=Thresholds.parse(args.thresholds),
        events=EventTopics.parse(args.events),
        master=args.master,
        driver_memory=args.driver_memory,
        shuffle_partitions=None
        if args.shuffle_partitions is None
        else int(args.shuffle_partitions),
        bucket_ms=parse_duration_ms(args.bucket, option="--bucket"),
        slack_ms=parse_duration_ms(args.slack, option="--slack"),
        grace_ms=parse_duration_ms(args.grace, option="--grace"),
        connect_timeout_s=float(args.connect_timeout),
    )
