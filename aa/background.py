"""The per-process background loops of `aa run` besides the flows: heartbeats (write this DC's,
watch the others'), consumer-group checkpoints per flow, and lag from committed state exported
as metrics. Each is a named :class:`BackgroundTask` in ``Supervisor.extra_tasks``: the loops do
not swallow their errors — the supervisor logs each failure with its cause, counts it
(``aa_background_task_failures_total{task}``), restarts the loop with backoff and shows it in
`/healthz` under ``tasks``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from aa.checkpoints.task import CheckpointTask
from aa.config import Topology
from aa.errors import AaError
from aa.heartbeat.tasks import watch_heartbeats, write_heartbeats
from aa.lag import LagReader
from aa.logs import get_logger
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics

Task = Callable[[asyncio.Event], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class BackgroundTask:
    """A named background loop: ``run(stop)`` works until ``stop`` is set. The supervisor
    restarts it with backoff when it raises or returns early; ``name`` labels its metrics and
    its `/healthz` entry (low-cardinality: ``heartbeat-write:SF``, ``checkpoints:SF->NYC``)."""

    name: str
    run: Task

    def __call__(self, stop: asyncio.Event) -> Awaitable[None]:
        return self.run(stop)


LAG_INTERVAL_S = 10.0


class LagExportError(AaError):
    """Lag could not be read for a flow (the other flows' lag was still exported)."""


log = get_logger("aa.background")


async def export_lag(
    topology: Topology, names: Sequence[str], metrics: Metrics, stop: asyncio.Event
) -> None:
    reader = LagReader(topology)
    try:
        await _export_lag(reader, names, metrics, stop)
    finally:
        await reader.close()


async def _export_lag(
    reader: LagReader, names: Sequence[str], metrics: Metrics, stop: asyncio.Event
) -> None:
    topology = reader.topology
    while not stop.is_set():
        failed: list[tuple[str, Exception]] = []
        for name in names:
            flow = topology.flow(name)
            try:
                rows = await reader.flow_lag(flow)
            except Exception as exc:  # noqa: BLE001 - the other flows' lag still refreshes
                failed.append((name, exc))
                continue
            for r in rows:
                labels = {
                    "source": flow.source,
                    "target": flow.target,
                    "topic": r.topic,
                    "partition": str(r.partition),
                }
                metrics.committed_lag.labels(**labels).set(r.records)
                metrics.lag_seconds.labels(**labels).set(r.seconds or 0.0)
        if failed:
            first_name, first = failed[0]
            raise LagExportError(f"lag of {first_name} could not be read: {first!r}") from first
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), LAG_INTERVAL_S)


def background_tasks(
    topology: Topology, flows: Sequence[tuple[FlowSettings, Any]], metrics: Metrics
) -> list[BackgroundTask]:
    """The loops for a process running ``flows`` (it runs in their target DC)."""
    local = sorted({s.target for s, _ in flows})
    tasks: list[BackgroundTask] = []
    if topology.heartbeats.enabled:
        for dc in local:
            tasks.append(
                BackgroundTask(f"heartbeat-write:{dc}", partial(write_heartbeats, topology, dc))
            )
            tasks.append(
                BackgroundTask(
                    f"heartbeat-watch:{dc}", partial(watch_heartbeats, topology, dc, metrics)
                )
            )
    if topology.checkpoints.enabled:
        for s, _ in flows:
            task = CheckpointTask(topology, s.source, s.target, metrics)
            tasks.append(BackgroundTask(f"checkpoints:{s.name}", task.run))
    names = [s.name for s, _ in flows]
    tasks.append(BackgroundTask("lag", partial(export_lag, topology, names, metrics)))
    return tasks
