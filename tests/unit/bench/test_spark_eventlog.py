"""The event-log reader: each SQL execution's wall, its tasks' CPU, and the gap between them."""

from __future__ import annotations

import json

import pytest

from bench.spark_eventlog import executions

pytestmark = pytest.mark.unit


def _task(stage: int, cpu_ns: int, run_ms: int) -> dict[str, object]:
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage,
        "Task Metrics": {"Executor CPU Time": cpu_ns, "Executor Run Time": run_ms},
    }


def test_two_overlapping_executions_get_their_own_tasks_and_a_negative_gap() -> None:
    start = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
    end = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"
    events = [
        {"Event": "SparkListenerApplicationStart", "Timestamp": 1_000},
        {"Event": start, "executionId": 0, "time": 2_000, "details": "parquet at X\nmore"},
        {"Event": "SparkListenerJobStart", "Stage IDs": [0, 1],
         "Properties": {"spark.sql.execution.id": "0"}},
        {"Event": start, "executionId": 1, "time": 3_000, "details": "collect at Y"},
        {"Event": "SparkListenerJobStart", "Stage IDs": [2],
         "Properties": {"spark.sql.execution.id": "1"}},
        {"Event": "SparkListenerJobStart", "Stage IDs": [3], "Properties": {}},
        _task(0, 1_500_000_000, 2_000),
        _task(1, 500_000_000, 1_000),
        _task(2, 250_000_000, 400),
        _task(3, 9_000_000_000, 9_000),  # a job outside any SQL execution
        {"Event": end, "executionId": 1, "time": 4_000},
        {"Event": end, "executionId": 0, "time": 6_500},
    ]  # fmt: skip
    got = executions(json.dumps(e) for e in events)
    assert [(e.id, e.start_s, e.wall_s, e.gap_s, e.call_site) for e in got] == [
        (0, 1.0, 4.5, 0.0, "parquet at X"),
        (1, 2.0, 1.0, -3.5, "collect at Y"),
    ]
    assert [(e.cpu_s, e.run_s) for e in got] == [(2.0, 3.0), (0.25, 0.4)]
