"""The equivalent replicator configs: one tuning, rendered as aa YAML and MM2 properties.

Both replicators get the same topics, the same consumer fetch sizes and the same producer
settings (acks=all, idempotence, batch size, linger, compression), so the figures compare the
engines, not their defaults. Both configs are written into the result JSON verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import yaml

IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"


@dataclass(frozen=True, slots=True)
class Tuning:
    """Client settings shared by both replicators (aa's defaults unless overridden)."""

    max_poll_records: int = 5000
    fetch_max_bytes: int = 64 * 1024 * 1024
    max_partition_fetch_bytes: int = 4 * 1024 * 1024
    batch_size: int = 512 * 1024
    linger_ms: int = 5
    compression: str = "none"
    max_in_flight: int = 5
    mm2_tasks: int = 1
    aa_memory_budget_mb: int | None = None
    """aa's ``tuning.memory_budget_mb`` (``None``: its default, 32 MiB per flow). It bounds what
    a flow holds between fetch and acknowledgement, and so the fetch sizes a catch-up runs at."""
    aa_max_bytes_per_s: float | None = None
    """aa's ``tuning.max_bytes_per_s``, the rate limit of each flow (``None``: none)."""
    delivery: str = "at-least-once"
    """Both replicators' delivery: ``exactly-once`` is aa's ``delivery: exactly-once`` and MM2's
    ``<target>.exactly.once.source.support = enabled`` (KIP-618, dedicated mode since 3.5)."""
    aa_partition_sets: int = 1
    """aa's ``exactly_once.partition_sets`` (an exactly-once flow shared by that many processes)."""

    def producer_props(self) -> dict[str, str]:
        """Java producer properties equal to aa's producer settings."""
        return {
            "acks": "all",
            "enable.idempotence": "true",
            "batch.size": str(self.batch_size),
            "linger.ms": str(self.linger_ms),
            "compression.type": self.compression,
            "max.in.flight.requests.per.connection": str(self.max_in_flight),
        }

    def consumer_props(self) -> dict[str, str]:
        return {
            "max.poll.records": str(self.max_poll_records),
            "fetch.max.bytes": str(self.fetch_max_bytes),
            "max.partition.fetch.bytes": str(self.max_partition_fetch_bytes),
        }


def aa_topology(
    bootstraps: Mapping[str, str],
    flows: Sequence[str],
    topics: Sequence[str],
    tuning: Tuning,
    *,
    loop_prevention: str = "headers",
    metrics_port: int = 0,
    schemas: Mapping[str, Any] | None = None,
) -> str:
    """aa's topology YAML for ``flows`` between ``bootstraps`` copying ``topics`` (regexes);
    ``schemas``: each flow's ``schemas`` section (registry ids translated: ``--framed``)."""
    doc = {
        "datacenters": {dc: {"bootstrap": b} for dc, b in bootstraps.items()},
        "flows": [{f: {"schemas": dict(schemas)}} for f in flows] if schemas else list(flows),
        "topics": {"include": list(topics)},
        "loop_prevention": loop_prevention,
        "delivery": tuning.delivery,
        **(
            {"exactly_once": {"partition_sets": tuning.aa_partition_sets}}
            if tuning.aa_partition_sets > 1
            else {}
        ),
        "tuning": {
            "max_poll_records": tuning.max_poll_records,
            "fetch_max_bytes": tuning.fetch_max_bytes,
            "max_partition_fetch_bytes": tuning.max_partition_fetch_bytes,
            "batch_size": tuning.batch_size,
            "linger_ms": tuning.linger_ms,
            "compression": tuning.compression,
            **(
                {"memory_budget_mb": tuning.aa_memory_budget_mb}
                if tuning.aa_memory_budget_mb is not None
                else {}
            ),
            **(
                {"max_bytes_per_s": tuning.aa_max_bytes_per_s}
                if tuning.aa_max_bytes_per_s is not None
                else {}
            ),
        },
        # Like MM2 below: no heartbeats, no consumer-group checkpoints; offset syncs stay on
        # in both (MM2 always writes them).
        "heartbeats": {"enabled": False},
        "checkpoints": {"enabled": False},
        "metrics": {"port": metrics_port},
    }
    return str(yaml.safe_dump(doc, sort_keys=False))


def mm2_properties(
    bootstraps: Mapping[str, str],
    flows: Sequence[str],
    topics: Sequence[str],
    tuning: Tuning,
    *,
    policy: str = IDENTITY,
) -> str:
    """MM2 dedicated-mode properties for ``flows``; every other pair is disabled.

    Heartbeats, checkpoints, group-offset sync and ACL sync are off: aa does none of them on
    this path, and they would add work (and topics) that the benchmark does not ask for. Topic
    config sync stays on, as aa's does. Internal topics get replication factor 1 (one broker).
    """
    dcs = list(bootstraps)
    enabled = set(flows)
    lines = [
        "# written by bench (aa vs MirrorMaker 2)",
        f"clusters = {', '.join(dcs)}",
        *(f"{dc}.bootstrap.servers = {b}" for dc, b in bootstraps.items()),
    ]
    for a in dcs:
        for b in dcs:
            if a != b:
                on = f"{a}->{b}" in enabled
                lines.append(f"{a}->{b}.enabled = {str(on).lower()}")
                if on:
                    lines.append(f"{a}->{b}.topics = {'|'.join(topics)}")
    lines += [
        f"replication.policy.class = {policy}",
        "replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
        "config.storage.replication.factor = 1",
        "emit.heartbeats.enabled = false",
        "emit.checkpoints.enabled = false",
        "sync.group.offsets.enabled = false",
        "sync.topic.acls.enabled = false",
        f"tasks.max = {tuning.mm2_tasks}",
        # Faster start-up, as MM2 itself suggests: the connectors are on the classpath.
        "plugin.discovery = service_load",
    ]
    if tuning.delivery == "exactly-once":
        lines += [f"{dc}.exactly.once.source.support = enabled" for dc in dcs]
    for dc in dcs:
        lines += [f"{dc}.producer.{k} = {v}" for k, v in tuning.producer_props().items()]
        lines += [f"{dc}.consumer.{k} = {v}" for k, v in tuning.consumer_props().items()]
    return "\n".join(lines) + "\n"


def tuning_dict(tuning: Tuning) -> dict[str, object]:
    return asdict(tuning)
