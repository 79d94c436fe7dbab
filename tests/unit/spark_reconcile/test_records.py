"""The read stage's generated code (``records.prepare``) stays small enough for HotSpot to
compile: a whole-stage method over 8,000 bytes of bytecode is never compiled and runs
interpreted, which doubled the stage's CPU twice before (docs/benchmarks.md, issue 14's fifth
and eleventh changes)."""

from __future__ import annotations

from typing import Any

import pytest

from spark_reconcile.records import prepare
from spark_reconcile.source import raw_schema
from tests.helpers.reconcile import mesh, raw_rows

pytestmark = [pytest.mark.unit, pytest.mark.spark]

HUGE_METHOD_BYTES = 8000
"""HotSpot's ``-XX:+DontCompileHugeMethods`` limit (on by default)."""


def _largest_generated_method(df: Any) -> int:
    """Bytes of bytecode of the largest method of ``df``'s whole-stage generated classes, as
    Spark's ``CodeGenerator.compile`` reports them."""
    jvm = df.sparkSession._jvm
    codegen = jvm.org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator
    sizes = []
    todo: list[Any] = [df._jdf.queryExecution().executedPlan()]
    while todo:
        node = todo.pop()
        if node.getClass().getSimpleName() == "WholeStageCodegenExec":
            sizes.append(codegen.compile(node.doCodeGen()._2())._2().maxMethodCodeSize())
        children = node.children()
        todo.extend(children.apply(i) for i in range(children.size()))
    return max(sizes, default=0)


@pytest.mark.parametrize("trust_copies", [True, False])
def test_read_stage_compiles_into_methods_hotspot_compiles(spark: Any, trust_copies: bool) -> None:
    # (the envelope check alone on every row, outside prepare's CASE, is ~9.0 kB: this fails)
    rows = raw_rows("users", mesh(("SF", "NYC", "LON"), "users", 3, events=True))
    raw = spark.createDataFrame(rows, raw_schema())
    prepared = raw.transform(prepare({"users": "lww"}, trust_copies=trust_copies))
    assert 0 < _largest_generated_method(prepared) < HUGE_METHOD_BYTES
