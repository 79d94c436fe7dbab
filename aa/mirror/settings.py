"""What one flow needs to run, resolved from the topology config (see ``aa.mirror.plan``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from aa.config import model

OnError = Literal["fail", "dead-letter"]
DeliveryMode = Literal["at-least-once", "exactly-once"]

DEFAULT_CONFIG_EXCLUDE = frozenset(model.DEFAULT_CONFIG_EXCLUDE)


@dataclass(frozen=True, slots=True)
class FlowSettings:
    """Everything a :class:`~aa.mirror.flow.MirrorFlow` is configured with."""

    source: str
    target: str
    source_client: Mapping[str, Any]
    target_client: Mapping[str, Any]
    group_id: str
    max_poll_records: int = 2000
    fetch_max_bytes: int = 16 * 1024 * 1024
    max_partition_fetch_bytes: int = 1024 * 1024
    batch_size: int = 512 * 1024
    linger_ms: int = 0
    compression: str | None = None
    max_inflight_batches: int = 4
    commit_interval_s: float = 1.0
    request_timeout_ms: int = 30_000
    on_error: OnError = "fail"
    dead_letter_topic: str = "aa.dead-letter"
    topic_sync: bool = True
    topic_sync_interval_s: float = 30.0
    config_exclude: frozenset[str] = field(default_factory=lambda: DEFAULT_CONFIG_EXCLUDE)
    delivery: DeliveryMode = "at-least-once"
    offsets_topic: str = ""
    """Exactly-once: where the source offsets are stored on the target ("" = the default
    ``aa.offsets.<source>.internal``)."""
    transaction_timeout_ms: int = 60_000
    offset_syncs: bool = True
    offset_sync_topic: str = ""
    """Offset syncs on the target ("" = the default ``aa.offset-syncs.<source>.internal``)."""

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"

    @property
    def eos_offsets_topic(self) -> str:
        return self.offsets_topic or f"aa.offsets.{self.source}.internal"

    @property
    def sync_topic(self) -> str:
        return self.offset_sync_topic or f"aa.offset-syncs.{self.source}.internal"

    @property
    def transactional_id(self) -> str:
        """One id per flow: a restarted or second process of the flow fences the older one
        (exactly-once runs one process per flow; see docs/operations.md)."""
        return f"aa.eos.{self.source}.{self.target}"
