"""One scan picks divergent's suspect events and the unconfirmed copies' rows
(``spark_reconcile.picked``): the rows the two scans it replaces picked."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile.copies import refused, unconfirmed_ids
from spark_reconcile.findings.divergent import events, suspect_keys
from spark_reconcile.findings.presence import ids
from spark_reconcile.picked import pick
from spark_reconcile.source import raw_schema
from tests.helpers.reconcile import mesh, raw_rows
from tests.unit.spark_reconcile.test_copies import DCS, FLOWS, _job_path

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def _unverified_alone(records: Any, per_id: Any, path: Path) -> Any:
    """The scan ``pick`` replaced: the tentative rows of unconfirmed ids joined in a scan of
    their own, written to ``path``, then those the native decoder refuses."""
    from pyspark.sql import functions as F

    records.filter(F.col("tent")).select("ltopic", "event_id", "dc", "offset", "ev_value").join(
        F.broadcast(unconfirmed_ids(per_id)), ["ltopic", "event_id"]
    ).write.mode("overwrite").parquet(str(path))
    return refused(records.sparkSession.read.parquet(str(path)))


def test_one_scan_picks_the_suspect_events_and_the_unverified_copies(
    spark: Any, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    users = mesh(DCS, "users", 6, events=True)

    def edit(dc: str, event: int, change: Any) -> int:
        """Apply ``change`` to ``dc``'s copy of SF's ``event``; its position."""
        at = next(
            n for n, r in enumerate(users[dc]) if f'"SF","i":{event}}}'.encode() in (r.value or b"")
        )
        users[dc][at] = replace(users[dc][at], value=change(users[dc][at].value))
        return at

    # k1: LON's copy of SF's event 1 forged (unconfirmed, well-formed); k2: NYC's copy of
    # SF's event 2 cut short (unconfirmed, refused); k3: LON lacks SF's event 3
    edit("LON", 1, lambda v: v.replace(b'"i":1}', b'"i":7}'))
    j = edit("NYC", 2, lambda v: v[:-9])
    users["LON"] = [r for r in users["LON"] if b'"by":"SF","i":3}' not in (r.value or b"")]
    job = _job_path(spark.createDataFrame(raw_rows("users", users), raw_schema()))
    per_id = job.transform(ids(DCS, FLOWS))
    suspects = suspect_keys({"users": DCS}, DCS)

    picked = pick(job, per_id, {"users": DCS}, DCS, tmp_path)

    bad = _unverified_alone(job, per_id, tmp_path / "alone")
    assert sorted((r.dc, r.offset) for r in bad.collect()) == [("NYC", j)]
    assertDataFrameEqual(picked.unverified, bad)
    every = events(job, ("ev_value", "ev_headers")).withColumn("key_h", F.xxhash64("key"))
    wanted = every.join(per_id.transform(suspects), ["ltopic", "key_h"], "left_semi")
    assertDataFrameEqual(picked.suspect_events, wanted.drop("key_h"))
    assert {r.key for r in picked.suspect_events.collect()} == {"k1", "k2", "k3"}
