"""One scan of the records for the few rows two later checks need, written as one small file.

After presence, two checks need a handful of rows with their values out of the records file:
divergent's suspect keys' events (their fold) and the tentative copies of unconfirmed ids
(:mod:`spark_reconcile.copies`: the native decoder's check). Each was a scan of every record
(1.8 s and 1.9 s of a 3 x 1M run's event log); both sets are picked by one scan with two
broadcast joins (issue 14's twelfth change). The checks then read the small file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.copies import refused, unconfirmed_ids
from spark_reconcile.findings.divergent import EVENT_FIELDS, event_columns, suspect_keys_written
from spark_reconcile.findings.presence import is_event


@dataclass(frozen=True, slots=True)
class Picked:
    """The rows one scan picked (each a view of one small Parquet file)."""

    suspect_events: Any
    """:func:`~.findings.divergent.events` rows, with ``value`` and ``headers``, of the
    suspect keys."""
    unverified: Any
    """The tentative copies of unconfirmed ids that the native decoder refuses
    (:func:`~spark_reconcile.copies.refused`)."""


def pick(
    records: Any,
    per_id: Any,
    topic_dcs: Mapping[str, Sequence[str]],
    dcs: Sequence[str],
    work: Path,
) -> Picked:
    """``records``: finished rows with ``ev_value`` and ``ev_headers``; ``per_id``: the
    :func:`~.findings.presence.ids` rows over ``dcs``; ``topic_dcs``: as for
    :func:`~.findings.divergent.divergent`. Writes the suspect keys, then the picked rows,
    into ``work``."""
    spark = records.sparkSession
    suspects = suspect_keys_written(per_id, topic_dcs, dcs, work).withColumn("sus", F.lit(True))
    todo = unconfirmed_ids(per_id).withColumn("todo", F.lit(True))
    event = is_event()
    rows = (
        records.filter(event | F.col("tent"))
        .select(
            *event_columns(("ev_value", "ev_headers")),
            "tent",
            event.alias("event"),
            F.when(event, F.xxhash64("event_key")).alias("key_h"),
        )
        # few keys are suspect and few ids unconfirmed, as a rule: both joined by broadcast,
        # every record stays put
        .join(F.broadcast(suspects), ["ltopic", "key_h"], "left")
        .join(F.broadcast(todo), ["ltopic", "event_id"], "left")
    )
    is_suspect = F.col("event") & F.coalesce(F.col("sus"), F.lit(False))
    is_todo = F.col("tent") & F.coalesce(F.col("todo"), F.lit(False))
    path = work / "picked"
    rows.filter(is_suspect | is_todo).write.mode("overwrite").parquet(str(path))
    back = spark.read.parquet(str(path))
    return Picked(
        suspect_events=back.filter(is_suspect).select(*EVENT_FIELDS, "value", "headers"),
        unverified=refused(
            back.filter(is_todo).select(
                "ltopic", "event_id", "dc", "offset", F.col("value").alias("ev_value")
            )
        ),
    )
