"""The read stage: raw Kafka rows -> the run's records file, presence per record id and the
rows two later checks need (:mod:`spark_reconcile.picked`).

One pass over Kafka: the narrow projection is decoded natively and written once as Parquet on
local disk (never in the JVM heap); rows the native decoder refused are decoded in Python
into a second, small file (:func:`store_records`). Mirrored copies are decoded only where
presence finds their bytes unlike a decoded row's; if one of those fails, the records are
written again with every row decoded (:mod:`spark_reconcile.copies`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from aa.logs import get_logger
from spark_reconcile.findings.presence import ids
from spark_reconcile.picked import Picked, pick
from spark_reconcile.ranges import PartitionRange
from spark_reconcile.records import decode_slow_rows, finish, prepare
from spark_reconcile.stages.scope import RunScope
from spark_reconcile.window import Window

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


@dataclass(frozen=True, slots=True)
class Stored:
    """What the read stage wrote, each a view of a Parquet file in the run's work folder."""

    records: Any
    """The normalised records (:func:`~spark_reconcile.records.finish`)."""
    per_id: Any
    """Presence per record id (:func:`~spark_reconcile.findings.presence.ids`)."""
    picked: Picked
    """Divergent's suspect events and the unconfirmed copies' rows."""


def work_dir(out: Path) -> Path:
    """The run's work folder (Parquet files it reads back), removed when the run ends."""
    return out / "_aa_reconcile_work"


def records_dir(out: Path) -> Path:
    """The run's normalised records (Parquet, in :func:`work_dir`)."""
    return work_dir(out) / "records"


def min_partitions(spark: Any, ranges: Sequence[PartitionRange]) -> int | None:
    """Spark's ``minPartitions`` for a read of ``ranges``: big partitions split across the
    cores; small reads stay one task per partition."""
    to_read = sum(max(0, r.end - r.start) for r in ranges)
    return spark.sparkContext.defaultParallelism if to_read >= SPLIT_READS_FROM else None


def store_records(
    spark: Any,
    raw: Any,
    resolvers: Mapping[str, str],
    path: Path,
    options: Mapping[str, str],
    *,
    trust_copies: bool,
) -> Any:
    """Raw rows -> the run's records (:func:`~spark_reconcile.records.prepare`) written once as
    Parquet at ``path``; the rows the native decoder refused, if any, decoded in Python into a
    second, small file beside it. Returns the view over the two."""
    raw.transform(prepare(resolvers, trust_copies=trust_copies)).write.options(**options).mode(
        "overwrite"
    ).parquet(str(path))
    stored = spark.read.parquet(str(path))
    if stored.filter(F.col("needs_slow")).isEmpty():
        return stored  # no Python worker starts: every event took the native decoder
    slow_path = path.parent / "slow"
    stored.filter(F.col("needs_slow")).transform(
        decode_slow_rows("ev_value", "ev_headers")
    ).write.mode("overwrite").parquet(str(slow_path))
    return stored.filter(~F.col("needs_slow")).unionByName(spark.read.parquet(str(slow_path)))


def read_records(
    spark: Any, raw: Any, scope: RunScope, window: Window, bucket_ms: int, work: Path
) -> Stored:
    """Raw rows -> :class:`Stored`, in ``work``: first with trusted copies; when a tentative
    copy fails the native check, once more with every row decoded."""
    records_path = work / "records"
    ids_path = work / "ids"
    for trust in (True, False):
        stored = store_records(
            spark, raw, scope.resolvers, records_path, RECORDS_PARQUET, trust_copies=trust
        )
        with_event_values = stored.transform(finish(window, bucket_ms))
        records = with_event_values.drop("ev_value", "ev_headers")
        get_logger("spark_reconcile").info("reconcile.stage", stage="findings", trust_copies=trust)
        # which DCs hold each record id, and each event id's copies, from one aggregation for
        # missing, duplicated and divergent: one narrow row per flagged id or event id
        records.transform(ids(scope.flag_dcs, scope.expected)).write.mode("overwrite").parquet(
            str(ids_path)
        )
        per_id = spark.read.parquet(str(ids_path))
        # divergent's suspect events and the unconfirmed copies' rows: one scan of the records
        picked = pick(with_event_values, per_id, scope.topic_dcs, scope.flag_dcs, work)
        if not trust or picked.unverified.isEmpty():
            break
    return Stored(records, per_id, picked)
