"""Prometheus metrics of the mirror, in one registry per process.

Names follow Prometheus conventions (``aa_`` prefix, base units, ``_total`` on counters) and
MM2's meanings (record-count, record-age-ms, replication-latency-ms). Labels stay
low-cardinality: source, target, topic; partition only on the lag gauges and the per-partition
counts MM2 also exports.
The hot path updates counters once per batch, not once per record.
"""

from __future__ import annotations

from functools import partial

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

# `*_created` series double the output and nobody graphs them.
disable_created_metrics()  # type: ignore[no-untyped-call]

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)


FLOW = ("source", "target")
TOPIC = (*FLOW, "topic")
REASON = (*TOPIC, "reason")
PARTITION = (*TOPIC, "partition")
DCS = ("local", "remote")


class Metrics:
    """Every metric aa exports. One instance per process; flows label their series."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        counter = partial(Counter, registry=self.registry)
        gauge = partial(Gauge, registry=self.registry)
        self.records = counter(
            "aa_records_replicated", "Records copied and acknowledged by the target", TOPIC
        )
        self.bytes = counter(
            "aa_bytes_replicated", "Key+value bytes copied and acknowledged", TOPIC
        )
        self.skipped = counter(
            "aa_records_skipped", "Records not copied because they would loop, by reason", REASON
        )
        self.expired = counter(
            "aa_records_expired",
            "Offsets the source deleted (retention, deleteRecords) before the flow copied them",
            TOPIC,
        )
        self.batch_path = counter(
            "aa_batch_path_batches",
            "Source record batches re-encoded whole by the batch path (not decoded record by "
            "record)",
            TOPIC,
        )
        self.dead_lettered = counter(
            "aa_records_dead_lettered", "Records routed to the dead-letter topic, by reason", REASON
        )
        self.latency = Histogram(
            "aa_replication_latency_seconds",
            "Now minus the record's timestamp when the target acknowledged it",
            FLOW,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.partition_records = counter(
            "aa_partition_records_replicated",
            "Records copied and acknowledged, per source partition (MM2's record-count)",
            PARTITION,
        )
        self.partition_bytes = counter(
            "aa_partition_bytes_replicated",
            "Key+value bytes copied and acknowledged, per source partition (MM2's byte-count)",
            PARTITION,
        )
        self.record_age = Histogram(
            "aa_record_age_seconds",
            "Now minus the record's timestamp when the flow fetched it (MM2's record-age-ms)",
            FLOW,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.checkpoint_latency = Histogram(
            "aa_checkpoint_latency_seconds",
            "From reading a group's offsets in the source to the target acknowledging its "
            "checkpoint (MM2's checkpoint-latency-ms)",
            FLOW,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.topic_state = gauge(
            "aa_topic_state",
            "1 for the state a topic of a flow is in (running, paused, failed), 0 for the others",
            (*TOPIC, "state"),
        )
        self.lag = gauge(
            "aa_consumer_lag_records", "Source end offset minus the next offset to copy", PARTITION
        )
        self.committed_lag = gauge(
            "aa_committed_lag_records",
            "Source end offset minus the next offset to copy as committed (group or EOS store)",
            PARTITION,
        )
        self.lag_seconds = gauge(
            "aa_committed_lag_seconds",
            "Age of the oldest source record not yet copied (0 when caught up)",
            PARTITION,
        )
        self.lag_read_at = gauge(
            "aa_committed_lag_read_timestamp_seconds",
            "Unix time of the flow's last successful committed-lag read: while its source DC "
            "is down the lag gauges keep their last value, and this tells how old it is",
            FLOW,
        )
        self.checkpoints = counter(
            "aa_checkpoints_written", "Consumer-group checkpoints written", FLOW
        )
        self.errors = counter("aa_errors", "Errors by kind", [*FLOW, "kind"])
        self.restarts = counter("aa_flow_restarts", "Flow restarts after a failure", FLOW)
        self.background_failures = counter(
            "aa_background_task_failures",
            "Failures of a background loop (heartbeats, checkpoints, lag), each followed by a "
            "restart with backoff",
            ["task"],
        )
        self.up = gauge("aa_flow_up", "1 while the flow runs, 0 otherwise", FLOW)
        self.heartbeat_age = gauge(
            "aa_heartbeat_age_seconds", "Age of the newest heartbeat seen from a remote DC", DCS
        )
        self.heartbeat_latency = gauge(
            "aa_heartbeat_latency_seconds",
            "End-to-end latency of the newest heartbeat from a remote DC",
            DCS,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
