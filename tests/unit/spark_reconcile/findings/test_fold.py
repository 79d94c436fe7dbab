"""The fold of the suspect keys' events (``spark_reconcile.findings.fold``): on the driver when
they are few, in Python workers otherwise, the same rows either way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile import findings
from spark_reconcile.findings import fold
from spark_reconcile.findings.divergent import suspect_keys
from spark_reconcile.findings.presence import ids
from tests.helpers.reconcile import (
    DCS,
    T0,
    Row,
    event_value,
    expected_flows,
    mesh,
    normalised,
    suspect_events,
)

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def _forged_users(spark: Any, tmp_path: Path) -> Any:
    """A mesh of events where SF's copy of LON's event 1 (k1's LWW winner) is forged, read
    from Parquet as the job reads its records (the slow decoder's UDF is not in its plan)."""
    users = mesh(DCS, "users", 4, events=True)
    i = next(n for n, r in enumerate(users["SF"]) if b'"by":"LON","i":1}' in (r.value or b""))
    altered = (users["SF"][i].value or b"").replace(b'"by":"LON","i":1}', b'"by":"LON","i":9}')
    users["SF"][i] = replace(users["SF"][i], value=altered)
    normalised(spark, mesh(DCS, "orders", 2), users).write.parquet(str(tmp_path / "records"))
    return spark.read.parquet(str(tmp_path / "records"))


def _divergent_as_the_job(spark: Any, df: Any) -> Any:
    flows = [tuple(r) for r in expected_flows(spark).collect()]
    suspect = df.transform(ids(DCS, flows)).transform(suspect_keys({"users": DCS}, DCS))
    return df.transform(
        findings.divergent({"users": DCS}, None, suspect_events=suspect_events(df, suspect))
    )


def test_divergent_folds_a_few_suspect_keys_without_a_python_worker(
    spark: Any, tmp_path: Path
) -> None:
    """The job's divergent (few suspect keys, as a rule) folds them on the driver: no Python
    UDF in its plan (the first Python worker of a 3 x 1M run took ~2.5 s to start)."""
    div = _divergent_as_the_job(spark, _forged_users(spark, tmp_path))
    plan = div._jdf.queryExecution().executedPlan().toString()
    assert "EvalPython" not in plan
    assert [(r.key, r.reason) for r in div.collect()] == [("k1", "conflicting copies")]


def test_divergent_decided_on_the_driver_matches_the_python_workers(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folded and decided on the driver, or in Python workers (more suspect events than the
    driver folds): the same rows for conflicting copies, absent events and an unfoldable key,
    every key of the topic suspect."""
    from pyspark.sql import functions as F

    users = mesh(DCS, "users", 8, keys=5, events=True)
    i = next(n for n, r in enumerate(users["SF"]) if b'"by":"LON","i":6}' in (r.value or b""))
    altered = (users["SF"][i].value or b"").replace(b'"by":"LON","i":6}', b'"by":"LON","i":9}')
    users["SF"][i] = replace(users["SF"][i], value=altered)  # k1: conflicting copies
    at = next(n for n, r in enumerate(users["NYC"]) if ("aa-src", b"LON/users/0/7") in r.headers)
    users["NYC"].pop(at)  # k2: absent events (NYC lacks its LWW winner)
    users["SF"].append(Row(b"k9", event_value("k9", (T0 + 50_000, 0, "SF"), {"i": 9}), (), T0))
    normalised(spark, mesh(DCS, "orders", 2), users).write.parquet(str(tmp_path / "records"))
    # k3's events under a resolver the fold refuses: unfoldable
    df = spark.read.parquet(str(tmp_path / "records")).withColumn(
        "resolver",
        F.when(F.col("event_key") == "k3", F.lit("nope")).otherwise(F.col("resolver")),
    )
    every_key = df.filter(F.col("event_key").isNotNull()).select(
        "ltopic", F.xxhash64("event_key").alias("key_h")
    )

    def divergent(**options: Any) -> Any:
        every_event = suspect_events(df, every_key.distinct())
        return df.transform(
            findings.divergent({"users": DCS}, None, suspect_events=every_event, **options)
        )

    workers = divergent(fold_on_driver=0)
    assert "EvalPython" in workers._jdf.queryExecution().executedPlan().toString()
    driver = divergent()
    assert "EvalPython" not in driver._jdf.queryExecution().executedPlan().toString()
    assertDataFrameEqual(driver, workers)
    # few events but large values: never collected to the driver
    monkeypatch.setattr(fold, "DRIVER_FOLD_MAX_BYTES", 100)
    large = divergent()
    assert "EvalPython" in large._jdf.queryExecution().executedPlan().toString()
    assertDataFrameEqual(large, workers)
    assert sorted((r.key, r.absent_in, r.reason) for r in driver.collect()) == [
        ("k1", [], "conflicting copies"),
        ("k2", [], "absent events"),
        ("k3", [], "unfoldable"),
        ("k9", ["LON", "NYC"], "absent events"),
    ]
