"""The findings stage: every finding of one run written as Parquet under ``OUT/findings`` and
read back (what the summary counts and samples). A finding with nothing to find (no looped,
malformed, lacking or maybe duplicated row) is written empty without scanning the records
again: a clean run's findings cost no scan each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile import findings
from spark_reconcile.findings.missing import MISSING
from spark_reconcile.findings.presence import Flagged, flagged_only
from spark_reconcile.frames import literal_frame
from spark_reconcile.options import JobOptions
from spark_reconcile.probe import Probe, horizons_frame, mirrored_frame
from spark_reconcile.record_stats import DELAY_SCHEMA, RecordStats, record_stats
from spark_reconcile.repair_scope import first_on_branch, not_older_than_target, with_payload
from spark_reconcile.source import read_positions
from spark_reconcile.stages.read import Stored
from spark_reconcile.stages.scope import RunScope


@dataclass(frozen=True, slots=True)
class Found:
    """The findings one run wrote."""

    written: Mapping[str, Any]
    """Finding -> a view of its Parquet folder (``absent`` first, then in the order written)."""
    empty: Mapping[str, bool]
    """The findings known to be empty without a query of their own."""
    stats: RecordStats
    """The records' statistics (delay, record counts, rows each finding would count)."""


def _only_if(rows: int, df: Any) -> Any:
    """``df``, or none of its rows when ``rows`` says there are none (no scan)."""
    return df if rows else df.limit(0)


def _written(spark: Any, df: Any, path: Path) -> Any:
    df.write.mode("overwrite").parquet(str(path))
    return spark.read.parquet(str(path))


def find(
    spark: Any, stored: Stored, scope: RunScope, probed: Probe, opts: JobOptions, work: Path
) -> Found:
    """Every finding of ``stored``'s records written under ``opts.out / "findings"`` (and the
    repair's to-do list with ``opts.repair``)."""
    records, all_ranges = stored.records, probed.all_ranges()
    out = opts.out / "findings"
    flagged = Flagged(
        scope.flag_dcs, _written(spark, stored.per_id.transform(flagged_only), work / "flagged")
    )
    # delay per flow and per bucket, record counts, copies without aa-ts, and how many rows
    # looped, malformed and completeness have: one scan of the records
    stats = record_stats(records)
    lacking, maybe_duplicated = flagged.rows.agg(
        F.count_if("lacking"), F.count_if("maybe_duplicated")
    ).first()
    empty = {
        "absent": not lacking,
        "missing": not lacking,
        "duplicated": not maybe_duplicated,
        "looped": not stats.looped,
        "malformed": not stats.malformed,
        "completeness": not stats.plain,
    }
    expected = literal_frame(
        spark, scope.flows, "origin string, ltopic string, target string, parent string"
    )
    absent = _written(
        spark,
        _only_if(
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
        ),
        out / "absent",
    )

    def with_values(positions: Any) -> Any:
        return read_positions(spark, scope.datacenters, scope.physical, positions)

    missing_rows = absent.filter(F.col("status") == MISSING)
    completeness = findings.completeness(expected.select("origin", "ltopic", "target"))
    tables = {
        "missing": with_payload(missing_rows, with_values, empty=not lacking),
        "duplicated": _only_if(maybe_duplicated, findings.duplicated(records, flagged)),
        "looped": _only_if(stats.looped, records.transform(findings.looped)),
        "malformed": _only_if(stats.malformed, records.transform(findings.malformed)),
        "divergent": records.transform(
            findings.divergent(scope.topic_dcs, None, suspect_events=stored.picked.suspect_events)
        ),
        "delay": literal_frame(spark, [tuple(r.values()) for r in stats.delay], DELAY_SCHEMA),
        "completeness": _only_if(stats.plain, records.transform(completeness)),
    }
    written = {"absent": absent} | {
        name: _written(spark, df, out / name) for name, df in tables.items()
    }
    if opts.repair:
        first_on_branch(written["missing"], absent).transform(
            not_older_than_target(spark, records, all_ranges)
        ).write.mode("overwrite").parquet(str(out / "repair"))
    return Found(written, empty, stats)
