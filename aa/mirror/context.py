"""What every stage of one flow run shares, handed to each stage as one value.

The stages (fetch, placement, route, target, settle, commit, expiry check) each keep their one
job; :class:`StageContext` spares them taking the run's settings, router, metrics, delivery
strategy and clients as up to eight separate arguments, and gives them one spelling of the
flow's metric labels. Built once per run, after the clients started.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aa.mirror.delivery import Delivery, FlowClients
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from aa.protocols import Router, SchemaIds


@dataclass(frozen=True, slots=True)
class StageContext:
    """One flow run's settings, router, metrics, delivery strategy and clients (the same
    :class:`FlowClients` its delivery was started with: producer, consumer, target admin,
    offset-sync writer, log); ``labels`` are the flow's metric labels (source, target)."""

    settings: FlowSettings
    router: Router
    metrics: Metrics
    delivery: Delivery
    clients: FlowClients
    schemas: SchemaIds | None = None
    """The flow's schema-id translation, when its topology gives it a ``schemas`` section."""
    labels: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", self.settings.labels)  # frozen: derived once, here
