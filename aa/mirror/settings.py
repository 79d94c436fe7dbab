"""What one flow needs to run, resolved from the topology config (see ``aa.mirror.plan``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from aa.config import model

OnError = Literal["fail", "dead-letter"]

DEFAULT_CONFIG_EXCLUDE = frozenset(model.DEFAULT_CONFIG_EXCLUDE)


@dataclass(frozen=True, slots=True)
class FlowSettings:
    """Everything a :class:`~aa.mirror.flow.MirrorFlow` is configured with."""

    source: str
    target: str
    source_client: Mapping[str, Any]
    target_client: Mapping[str, Any]
    group_id: str
    max_poll_records: int = 5000
    fetch_max_bytes: int = 64 * 1024 * 1024
    max_partition_fetch_bytes: int = 4 * 1024 * 1024
    batch_size: int = 512 * 1024
    linger_ms: int = 5
    compression: str | None = None
    max_inflight_batches: int = 8
    commit_interval_s: float = 1.0
    request_timeout_ms: int = 30_000
    on_error: OnError = "fail"
    dead_letter_topic: str = "aa.dead-letter"
    topic_sync: bool = True
    topic_sync_interval_s: float = 30.0
    config_exclude: frozenset[str] = field(default_factory=lambda: DEFAULT_CONFIG_EXCLUDE)

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"
