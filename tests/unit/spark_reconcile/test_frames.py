"""Small tables as literal query plans (``spark_reconcile.frames``)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile.frames import literal_frame

pytestmark = [pytest.mark.unit, pytest.mark.spark]


def test_literal_frame_builds_small_tables_in_the_jvm(spark: Any) -> None:
    schema = "origin string, committed long, empty boolean"
    rows = [("SF", 7, False), ("NYC", None, True)]
    assertDataFrameEqual(literal_frame(spark, rows, schema), spark.createDataFrame(rows, schema))
    none = literal_frame(spark, [], schema)
    assert none.count() == 0
    assert none.dtypes == [("origin", "string"), ("committed", "bigint"), ("empty", "boolean")]
    with pytest.raises(ValueError, match="has 2 values"):
        literal_frame(spark, [("SF", 1)], schema)
