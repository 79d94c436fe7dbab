"""What one flow needs to run, resolved from the topology config (see :mod:`aa.mirror.build`).

The defaults are not written here: they are the topology's (:mod:`aa.config.model`), so a flow
made directly (tests, the bench) behaves like one built from a topology file that leaves the
setting out; topic names left empty are filled from :mod:`aa.config.names` for the flow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from aiokafka import TopicPartition

from aa.config import model, names
from aa.config.registries import SchemaTranslation

OnError = Literal["fail", "dead-letter"]
DeliveryMode = Literal["at-least-once", "exactly-once"]

DEFAULT_CONFIG_EXCLUDE = frozenset(model.DEFAULT_CONFIG_EXCLUDE)

_TUNING = model.Tuning()
_TOPIC_SYNC = model.TopicSync()
_ON_ERROR = model.OnError()
_OFFSET_SYNC = model.OffsetSyncs()
_EXACTLY_ONCE = model.ExactlyOnceOptions()
_TOPOLOGY_DELIVERY: DeliveryMode = {f.name: f.default for f in fields(model.Topology)}["delivery"]  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class FlowSettings:
    """Everything a :class:`~aa.mirror.flow.MirrorFlow` is configured with."""

    source: str
    target: str
    source_client: Mapping[str, Any]
    target_client: Mapping[str, Any]
    group_id: str
    max_poll_records: int = _TUNING.max_poll_records
    fetch_max_bytes: int = _TUNING.fetch_max_bytes
    max_partition_fetch_bytes: int = _TUNING.max_partition_fetch_bytes
    fetch_max_wait_ms: int = _TUNING.fetch_max_wait_ms
    fetch_min_bytes: int = _TUNING.fetch_min_bytes
    memory_budget_mb: int = _TUNING.memory_budget_mb
    batch_size: int = _TUNING.batch_size
    linger_ms: int = _TUNING.linger_ms
    compression: str | None = None if _TUNING.compression == "none" else _TUNING.compression
    max_inflight_batches: int = _TUNING.max_in_flight
    commit_interval_s: float = _TUNING.commit_interval_s
    request_timeout_ms: int = _TUNING.request_timeout_ms
    on_error: OnError = _ON_ERROR.action
    dead_letter_topic: str = ""
    """Where refused records go ("" = the topology's default template for this flow)."""
    topic_sync: bool = _TOPIC_SYNC.enabled
    topic_sync_interval_s: float = _TOPIC_SYNC.interval_s
    replication_factor: int = _TOPIC_SYNC.replication_factor
    """Replicas of the topics the flow creates in its target (-1: the cluster's default)."""
    config_exclude: frozenset[str] = field(default_factory=lambda: DEFAULT_CONFIG_EXCLUDE)
    delivery: DeliveryMode = _TOPOLOGY_DELIVERY
    offsets_topic: str = ""
    """Exactly-once: where the source offsets are stored on the target ("" = the default
    ``aa.offsets.<source>.internal``)."""
    transaction_timeout_ms: int = 60_000
    partition_sets: int = _EXACTLY_ONCE.partition_sets
    """Exactly-once: how many sets its partitions are split in (:mod:`aa.mirror.partition_sets`)."""
    partition_set: int | None = None
    """The set this run copies (``None``: the whole flow); its partitions are ``assigned``."""
    assigned: tuple[TopicPartition, ...] = ()
    """The source partitions this run copies, given (a partition set's run); empty: the flow
    subscribes to its topics and takes what its group assigns."""
    offset_syncs: bool = _OFFSET_SYNC.enabled
    offset_sync_topic: str = ""
    """Offset syncs on the target ("" = the default ``aa.offset-syncs.<source>.internal``)."""
    schemas: SchemaTranslation | None = None
    """The flow's schema registries and framed topics, when it translates schema ids."""

    max_bytes_per_s: float = _TUNING.max_bytes_per_s
    """The rate limit of the flow's fetches (0: none); changed live by a reload or the API."""

    def __post_init__(self) -> None:
        for attr, template in (
            ("dead_letter_topic", _ON_ERROR.dead_letter_topic),
            ("offsets_topic", names.EOS_OFFSETS_TOPIC),
            ("offset_sync_topic", _OFFSET_SYNC.topic),
        ):
            if not getattr(self, attr):
                object.__setattr__(self, attr, names.for_flow(template, self.source, self.target))

    @property
    def producer_compression(self) -> str | None:
        """The codec of the producer's own batches (offset syncs, dead letters, positions);
        the copies' batches get theirs from :meth:`aa.mirror.target.Target.codec`."""
        return None if self.compression == "source" else self.compression

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"

    @property
    def labels(self) -> dict[str, str]:
        """The flow's metric labels (a new dict: callers add topic, reason...)."""
        return {"source": self.source, "target": self.target}

    @property
    def eos_offsets_topic(self) -> str:
        return self.offsets_topic

    @property
    def sync_topic(self) -> str:
        return self.offset_sync_topic

    @property
    def control_topic(self) -> str:
        """Where the flow keeps what operators paused (:mod:`aa.mirror.control_store`)."""
        return names.for_flow(names.CONTROL_TOPIC, self.source, self.target)

    @property
    def transactional_id(self) -> str:
        """One id per flow, or per partition set: a restarted or second process of the flow
        (of the set) fences the older one (see docs/operations.md)."""
        if self.partition_set is None:
            return names.for_flow(names.TRANSACTIONAL_ID, self.source, self.target)
        return names.set_transactional_id(
            self.source, self.target, self.partition_set, self.partition_sets
        )
