"""Prometheus metrics of the mirror, in one registry per process.

Names follow Prometheus conventions (``aa_`` prefix, base units, ``_total`` on counters) and
MM2's meanings (record-count, record-age-ms, replication-latency-ms). Labels stay
low-cardinality: source, target, topic, and partition only on the lag gauge.
The hot path updates counters once per batch, not once per record.
"""

from __future__ import annotations

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


class Metrics:
    """Every metric aa exports. One instance per process; flows label their series."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        flow = ["source", "target"]
        topic = [*flow, "topic"]
        self.records = Counter(
            "aa_records_replicated",
            "Records copied and acknowledged by the target",
            topic,
            registry=r,
        )
        self.bytes = Counter(
            "aa_bytes_replicated", "Key+value bytes copied and acknowledged", topic, registry=r
        )
        self.skipped = Counter(
            "aa_records_skipped",
            "Records not copied because they would loop, by reason",
            [*topic, "reason"],
            registry=r,
        )
        self.expired = Counter(
            "aa_records_expired",
            "Offsets the source deleted (retention, deleteRecords) before the flow copied them",
            topic,
            registry=r,
        )
        self.dead_lettered = Counter(
            "aa_records_dead_lettered",
            "Records routed to the dead-letter topic, by reason",
            [*topic, "reason"],
            registry=r,
        )
        self.latency = Histogram(
            "aa_replication_latency_seconds",
            "Now minus the record's timestamp when the target acknowledged it",
            flow,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lag = Gauge(
            "aa_consumer_lag_records",
            "Source end offset minus the next offset to copy",
            [*topic, "partition"],
            registry=r,
        )
        self.committed_lag = Gauge(
            "aa_committed_lag_records",
            "Source end offset minus the next offset to copy as committed (group or EOS store)",
            [*topic, "partition"],
            registry=r,
        )
        self.lag_seconds = Gauge(
            "aa_committed_lag_seconds",
            "Age of the oldest source record not yet copied (0 when caught up)",
            [*topic, "partition"],
            registry=r,
        )
        self.lag_read_at = Gauge(
            "aa_committed_lag_read_timestamp_seconds",
            "Unix time of the flow's last successful committed-lag read: while its source DC "
            "is down the lag gauges keep their last value, and this tells how old it is",
            flow,
            registry=r,
        )
        self.checkpoints = Counter(
            "aa_checkpoints_written", "Consumer-group checkpoints written", flow, registry=r
        )
        self.errors = Counter("aa_errors", "Errors by kind", [*flow, "kind"], registry=r)
        self.restarts = Counter(
            "aa_flow_restarts", "Flow restarts after a failure", flow, registry=r
        )
        self.background_failures = Counter(
            "aa_background_task_failures",
            "Failures of a background loop (heartbeats, checkpoints, lag), each followed by a "
            "restart with backoff",
            ["task"],
            registry=r,
        )
        self.up = Gauge("aa_flow_up", "1 while the flow runs, 0 otherwise", flow, registry=r)
        self.heartbeat_age = Gauge(
            "aa_heartbeat_age_seconds",
            "Age of the newest heartbeat seen from a remote DC",
            ["local", "remote"],
            registry=r,
        )
        self.heartbeat_latency = Gauge(
            "aa_heartbeat_latency_seconds",
            "End-to-end latency of the newest heartbeat from a remote DC",
            ["local", "remote"],
            registry=r,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
