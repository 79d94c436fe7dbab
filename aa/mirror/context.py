"""What every stage of one flow run shares, handed to each stage as one value.

The stages (fetch, placement, route, target, settle, commit, expiry check) each keep their one
job; :class:`StageContext` only spares them taking the flow's settings, router, metrics, log and
offset-sync writer as five separate arguments, and gives them one spelling of the flow's metric
labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aa.mirror.settings import FlowSettings
from aa.mirror.types import Router
from aa.observe.metrics import Metrics
from aa.offsets.writer import OffsetSyncWriter


@dataclass(frozen=True, slots=True)
class StageContext:
    """One flow run's settings, router, metrics, log and offset-sync writer (``None``: offset
    syncs off); ``labels`` are the flow's metric labels (source, target)."""

    settings: FlowSettings
    router: Router
    metrics: Metrics
    log: Any
    syncs: OffsetSyncWriter | None = None
    labels: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        labels = {"source": self.settings.source, "target": self.settings.target}
        object.__setattr__(self, "labels", labels)  # frozen: derived once, here
