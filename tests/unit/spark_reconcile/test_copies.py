"""Trusted copies (``spark_reconcile.copies``): a mirrored copy is decoded only when its bytes
are unlike a decoded row's, and the job's path then gives what a full decode gives."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile.findings.presence import ids
from spark_reconcile.picked import pick
from spark_reconcile.records import decode_slow, finish, normalise, prepare
from spark_reconcile.source import raw_schema
from tests.helpers.reconcile import DCS, RESOLVERS, WINDOW, mesh, raw_rows

pytestmark = [pytest.mark.unit, pytest.mark.spark]

FLOWS = [("SF", "users", d) for d in DCS if d != "SF"]
IDENTITY = ("dc", "offset", "rid", "event_id", "event_key", "event_error")


def _job_path(raw: Any) -> Any:
    """The job's records with trusted copies (what ``store_records`` and ``finish`` give)."""
    return (
        raw.transform(prepare(RESOLVERS, trust_copies=True))
        .transform(decode_slow("ev_value", "ev_headers"))
        .transform(finish(WINDOW, 60_000))
        .cache()
    )


def _unverified(job: Any, per_id: Any, work: Path) -> Any:
    """The tentative copies of unconfirmed ids that the native decoder refuses, as the job
    picks them."""
    return pick(job, per_id, {"users": DCS}, DCS, work).unverified


def test_copies_are_decoded_only_where_their_bytes_differ_and_a_broken_one_is_caught(
    spark: Any, tmp_path: Path
) -> None:
    users = mesh(DCS, "users", 3, events=True)
    # a forged but well-formed copy (same id, another payload): confirmed by the full check
    i = next(n for n, r in enumerate(users["LON"]) if b'"by":"SF","i":1}' in (r.value or b""))
    forged = (users["LON"][i].value or b"").replace(b'"i":1}', b'"i":7}')
    users["LON"][i] = replace(users["LON"][i], value=forged)
    raw = spark.createDataFrame(raw_rows("users", users), raw_schema())
    full = raw.transform(normalise(WINDOW, 60_000, RESOLVERS))
    job = _job_path(raw)

    # the copies took the cheap path; the decoded rows are every origin's own writes
    rows = job.select("dc", "tent", "has_prov").collect()
    assert sorted((r.dc, r.tent, r.has_prov) for r in rows) == sorted(
        (dc, tent, tent) for dc in DCS for tent in (False,) * 3 + (True,) * 6
    )
    # same identity for every row, same presence, and only the forged id to check fully
    assertDataFrameEqual(job.select(*IDENTITY), full.select(*IDENTITY))
    per_id = job.transform(ids(DCS, FLOWS))
    # (an unconfirmed id's row also names its rid)
    assertDataFrameEqual(
        per_id.drop("unconfirmed", "rid"),
        full.transform(ids(DCS, FLOWS)).drop("unconfirmed", "rid"),
    )
    todo = per_id.filter("unconfirmed").collect()
    assert [r.rid for r in todo] == [f"event:{forged[7:33].decode()}"]
    assert _unverified(job, per_id, tmp_path / "a").count() == 0

    # refused by the full check, so the job decodes every row again: a copy whose bytes are
    # broken but start like an envelope, and the copies of an event only the Python decoder
    # accepts (an escape in its key: a cut key would keep the escape)
    broken = (users["NYC"][i].value or b"")[:-9]
    users["NYC"][i] = replace(users["NYC"][i], value=broken)
    escaped = (users["SF"][0].value or b"").replace(b'"key":"k0"', b'"key":"k0\\u00e9"')
    for dc, n in (("SF", 0), ("NYC", 3), ("LON", 3)):  # SF's event 0 and its copies
        users[dc][n] = replace(users[dc][n], value=escaped)
    raw = spark.createDataFrame(raw_rows("users", users), raw_schema())
    job = _job_path(raw)
    bad = _unverified(job, job.transform(ids(DCS, FLOWS)), tmp_path / "b").collect()
    assert sorted((r.dc, r.offset) for r in bad) == [("LON", 3), ("NYC", 3), ("NYC", i)]
