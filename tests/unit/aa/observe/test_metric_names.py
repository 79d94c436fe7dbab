"""The exported metric names, kinds and labels: dashboards and alerts depend on them."""

from __future__ import annotations

import pytest
from prometheus_client import Metric

from aa.observe.metrics import Metrics

pytestmark = pytest.mark.unit

FLOW = ("source", "target")
TOPIC = (*FLOW, "topic")
PARTITION = (*TOPIC, "partition")

EXPORTED = {
    "aa_records_replicated": ("counter", TOPIC),
    "aa_bytes_replicated": ("counter", TOPIC),
    "aa_records_skipped": ("counter", (*TOPIC, "reason")),
    "aa_records_expired": ("counter", TOPIC),
    "aa_records_dead_lettered": ("counter", (*TOPIC, "reason")),
    "aa_batch_path_batches": ("counter", TOPIC),
    "aa_replication_latency_seconds": ("histogram", FLOW),
    "aa_partition_records_replicated": ("counter", PARTITION),
    "aa_partition_bytes_replicated": ("counter", PARTITION),
    "aa_record_age_seconds": ("histogram", FLOW),
    "aa_checkpoint_latency_seconds": ("histogram", FLOW),
    "aa_topic_state": ("gauge", (*TOPIC, "state")),
    "aa_consumer_lag_records": ("gauge", PARTITION),
    "aa_committed_lag_records": ("gauge", PARTITION),
    "aa_committed_lag_seconds": ("gauge", PARTITION),
    "aa_committed_lag_read_timestamp_seconds": ("gauge", FLOW),
    "aa_checkpoints_written": ("counter", FLOW),
    "aa_errors": ("counter", (*FLOW, "kind")),
    "aa_flow_restarts": ("counter", FLOW),
    "aa_background_task_failures": ("counter", ("task",)),
    "aa_flow_up": ("gauge", FLOW),
    "aa_heartbeat_age_seconds": ("gauge", ("local", "remote")),
    "aa_heartbeat_latency_seconds": ("gauge", ("local", "remote")),
}


def test_every_metric_keeps_its_name_kind_and_labels() -> None:
    metrics = Metrics()
    collectors = [c for c in vars(metrics).values() if hasattr(c, "_labelnames")]
    found = {c._name: (c._type, c._labelnames) for c in collectors}
    assert found == EXPORTED
    described: list[Metric] = list(metrics.registry.collect())
    assert sorted(m.name for m in described) == sorted(EXPORTED)
