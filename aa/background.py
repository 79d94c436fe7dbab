"""The per-process background loops of `aa run` besides the flows: heartbeats (write this DC's,
watch the others'), consumer-group checkpoints per flow, and lag from committed state exported
as metrics. Each is a ``Supervisor.extra_tasks`` entry: a coroutine function of the stop event."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from aa.checkpoints.task import CheckpointTask
from aa.config import Topology
from aa.heartbeat.tasks import watch_heartbeats, write_heartbeats
from aa.lag import flow_lag
from aa.logs import get_logger
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics

Task = Callable[[asyncio.Event], Awaitable[None]]
LAG_INTERVAL_S = 10.0
log = get_logger("aa.background")


async def export_lag(
    topology: Topology, names: Sequence[str], metrics: Metrics, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        for name in names:
            flow = topology.flow(name)
            try:
                rows = await flow_lag(topology, flow)
            except Exception as exc:  # noqa: BLE001 - a metric refresh; retried next interval
                log.warning("lag_failed", flow=name, error=repr(exc))
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
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), LAG_INTERVAL_S)


def background_tasks(
    topology: Topology, flows: Sequence[tuple[FlowSettings, Any]], metrics: Metrics
) -> list[Task]:
    """The loops for a process running ``flows`` (it runs in their target DC)."""
    local = sorted({s.target for s, _ in flows})
    tasks: list[Task] = []
    if topology.heartbeats.enabled:
        for dc in local:
            tasks.append(partial(write_heartbeats, topology, dc))
            tasks.append(partial(watch_heartbeats, topology, dc, metrics))
    if topology.checkpoints.enabled:
        for s, _ in flows:
            tasks.append(CheckpointTask(topology, s.source, s.target, metrics).run)
    tasks.append(partial(export_lag, topology, [s.name for s, _ in flows], metrics))
    return tasks
