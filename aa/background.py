"""The per-process background loops of `aa run` besides the flows: heartbeats (write this DC's,
watch the others'), consumer-group checkpoints per flow, and lag from committed state exported
as metrics. Each is a named :class:`BackgroundTask` in ``Supervisor.extra_tasks``: the loops do
not swallow their errors — the supervisor logs each failure with its cause, counts it
(``aa_background_task_failures_total{task}``), restarts the loop with backoff and shows it in
`/healthz` under ``tasks``."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from aa.checkpoints.task import CheckpointTask
from aa.config import Flow, Topology, client_kwargs
from aa.deadlines import finished_within
from aa.errors import AaError
from aa.heartbeat.tasks import watch_heartbeats, write_heartbeats
from aa.lag import LagReader, PartitionLag
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
    clients: tuple[Mapping[str, Any], ...] = ()
    """The DCs it needs (client settings): while it backs off after one was down, it restarts
    as soon as they answer again."""

    def __call__(self, stop: asyncio.Event) -> Awaitable[None]:
        return self.run(stop)


LAG_READ_SLACK_S = 5.0
"""A lag read may take the interval plus this long; longer counts as a failed read."""


class LagExportError(AaError):
    """Lag could not be read for a flow (the other flows' lag was still exported)."""


log = get_logger("aa.background")


async def export_lag(
    topology: Topology,
    names: Sequence[str],
    metrics: Metrics,
    stop: asyncio.Event,
    *,
    interval_s: float | None = None,
    read_timeout_s: float | None = None,
) -> None:
    """Export the committed lag of flows ``names`` every ``interval_s`` (default: the config's
    ``metrics.lag_interval_s``) until ``stop``; a read without an answer after
    ``read_timeout_s`` (default: the interval + 5 s) is a failure."""
    reader = LagReader(topology)
    every = topology.metrics.lag_interval_s if interval_s is None else interval_s
    bound = every + LAG_READ_SLACK_S if read_timeout_s is None else read_timeout_s
    reads: dict[str, asyncio.Task[list[PartitionLag]]] = {}
    try:
        await _export_lag(reader, names, metrics, stop, every, bound, reads)
    finally:
        await _abandon(reads.values(), bound)
        closing = asyncio.create_task(reader.close())
        await asyncio.wait({closing}, timeout=bound)
        # a close that hangs on a dead DC must not hold the restart
        await _abandon([closing], bound)


_abandoned: set[asyncio.Task[Any]] = set()
"""Reads that did not end when cancelled (aiokafka does not always let a cancellation through
while a broker is down): kept referenced until they end, which they do once it answers."""


async def _abandon(tasks: Iterable[asyncio.Task[Any]], wait_s: float) -> None:
    """Cancel ``tasks``; those that do not end within a bounded wait are kept in
    ``_abandoned`` until they do (never unreferenced while pending, never unretrieved)."""
    tasks = list(tasks)
    left = [t for t in tasks if not t.done()]
    for t in left:
        t.cancel()
    if left:
        await asyncio.wait(left, timeout=min(wait_s, LAG_READ_SLACK_S))
    for t in tasks:
        if not t.done():
            _abandoned.add(t)
            t.add_done_callback(_forget)
        elif not t.cancelled() and t.exception() is not None:
            log.warning("lag_reader_cleanup_failed", error=repr(t.exception()))


def _forget(task: asyncio.Task[Any]) -> None:
    _abandoned.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: the failure was already counted when it timed out


async def _read_lag(
    reader: LagReader,
    flow: Flow,
    reads: dict[str, asyncio.Task[list[PartitionLag]]],
    timeout_s: float,
) -> list[PartitionLag]:
    """One bounded lag read of ``flow`` (:func:`aa.deadlines.finished_within`): a DC that
    black-holes packets would otherwise hold it for the client's request timeout (40 s) with the
    gauges frozen. While a timed-out read has not ended, no second one is started (at most one
    per flow)."""
    task = reads.get(flow.name)
    if task is None or task.done():
        task = reads[flow.name] = asyncio.create_task(reader.flow_lag(flow))
        finished = await finished_within(task, timeout_s)
    else:  # the timed-out read has not ended: no second one
        task.cancel()
        finished = False
    if not finished:
        raise LagExportError(
            f"no answer within {timeout_s:g} s: is {flow.source} (and, for exactly-once, "
            f"{flow.target}) reachable from here?"
        )
    del reads[flow.name]
    return task.result()


async def _export_lag(
    reader: LagReader,
    names: Sequence[str],
    metrics: Metrics,
    stop: asyncio.Event,
    interval_s: float,
    read_timeout_s: float,
    reads: dict[str, asyncio.Task[list[PartitionLag]]],
) -> None:
    topology = reader.topology
    while not stop.is_set():
        failed: list[tuple[str, Exception]] = []
        for name in names:
            flow = topology.flow(name)
            try:
                rows = await _read_lag(reader, flow, reads, read_timeout_s)
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
            metrics.lag_read_at.labels(source=flow.source, target=flow.target).set(time.time())
        if failed:
            first_name, first = failed[0]
            raise LagExportError(f"lag of {first_name} could not be read: {first!r}") from first
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)


def background_tasks(
    topology: Topology, flows: Sequence[tuple[FlowSettings, Any]], metrics: Metrics
) -> list[BackgroundTask]:
    """The loops for a process running ``flows`` (it runs in their target DC)."""
    local = sorted({s.target for s, _ in flows})
    tasks: list[BackgroundTask] = []

    def needs(*dcs: str) -> tuple[Mapping[str, Any], ...]:
        return tuple(client_kwargs(topology.datacenter(dc)) for dc in dict.fromkeys(dcs))

    if topology.heartbeats.enabled:
        for dc in local:
            write = partial(write_heartbeats, topology, dc)
            watch = partial(watch_heartbeats, topology, dc, metrics)
            tasks.append(BackgroundTask(f"heartbeat-write:{dc}", write, needs(dc)))
            tasks.append(BackgroundTask(f"heartbeat-watch:{dc}", watch, needs(dc)))
    if topology.checkpoints.enabled:
        for s, _ in flows:
            task = CheckpointTask(topology, s.source, s.target, metrics)
            tasks.append(
                BackgroundTask(f"checkpoints:{s.name}", task.run, needs(s.source, s.target))
            )
    # one lag loop per flow: a flow whose DC is down backs off alone, the others' lag stays fresh
    for s, _ in flows:
        lag = partial(export_lag, topology, [s.name], metrics)
        eos = s.delivery == "exactly-once"  # its position is stored on the target
        tasks.append(
            BackgroundTask(f"lag:{s.name}", lag, needs(s.source, *([s.target] if eos else [])))
        )
    return tasks
