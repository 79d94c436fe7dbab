"""Runs a DC's flows in one process: restarts a failed flow with backoff without touching the
others, and shuts everything down gracefully on SIGTERM/SIGINT within a bounded time.

The background loops (heartbeats, checkpoints, lag export: ``extra_tasks``) are supervised the
same way: a loop that raises — or returns before stop — is logged with its traceback
(``background_task_failed``), counted in ``aa_background_task_failures_total{task}``, restarted
with the same exponential backoff, and shown under ``tasks`` in `/healthz`. Nothing dies
silently.

Never a restart loop: a failure aa can explain — a DC down (a Kafka client error, an
``OSError``), an :class:`~aa.errors.AaError`, a retriable :class:`FlowError` — is retried with
backoff for as long as it lasts, since the DC comes back. Anything else is a crash (a defect, or
an input aa does not expect): it is logged with its traceback each time, and after
:data:`CRASH_LIMIT` crashes in a row, none of them after a healthy minute of running, the flow
or loop is parked as ``failed`` with one message saying so, instead of crashing again forever.

A process that seems stuck can be asked where it waits: SIGUSR1 logs ``task_dump``, one line per
asyncio task with the chain of awaits it is suspended in; a task that misses the shutdown
deadline is dumped the same way before it is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

from aa.admin import metadata_failure
from aa.lifecycle import loop_signals
from aa.logs import get_logger
from aa.mirror.errors import is_crash, refused_by_acl
from aa.mirror.flow import FlowError
from aa.mirror.partition_sets import flow_for
from aa.mirror.plane import ControlPlane
from aa.mirror.reload import ReloadPlan
from aa.mirror.restarts import CRASH_LIMIT as CRASH_LIMIT  # re-exported: tests import them here
from aa.mirror.restarts import HEALTHY_RUN_S as HEALTHY_RUN_S
from aa.mirror.restarts import Backoff, FlowState, Streak
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from aa.protocols import Router, RunningFlow

log = get_logger("aa.supervisor")

PROBE_INTERVAL_S = 5.0
"""While a flow backs off after a DC was down, how often it asks whether the DC answers again."""


async def dc_answers(client: Mapping[str, Any], timeout_s: float = 5.0) -> bool:
    """Whether a DC's cluster answers a metadata request within ``timeout_s``."""
    return await metadata_failure("probe", client, timeout_s) is None


def task_stack(task: asyncio.Task[Any]) -> list[str]:
    """Where a task is suspended: ``file:line function`` per frame of its await chain."""
    return [
        f"{f.f_code.co_filename}:{f.f_lineno} {f.f_code.co_name}" for f in task.get_stack(limit=40)
    ]


def dump_tasks(reason: str, only: set[asyncio.Task[Any]] | None = None) -> None:
    """Log every asyncio task (or ``only`` these) with its await chain: ``task_dump``."""
    tasks = only if only is not None else asyncio.all_tasks()
    for task in sorted(tasks, key=lambda t: t.get_name()):
        if not task.done():
            log.warning("task_dump", reason=reason, task=task.get_name(), stack=task_stack(task))


class Supervisor:
    """Owns the flows of one process. ``run`` returns when stopped (signal or ``stop()``)."""

    def __init__(
        self,
        flows: Sequence[tuple[FlowSettings, Router]],
        metrics: Metrics,
        *,
        backoff: Backoff | None = None,
        shutdown_timeout_s: float = 30.0,
        flow_factory: Callable[[FlowSettings, Router, Metrics], RunningFlow] = flow_for,
        probe_interval_s: float = PROBE_INTERVAL_S,
        answers: Callable[[Mapping[str, Any]], Awaitable[bool]] = dc_answers,
    ) -> None:
        self._flows = list(flows)
        self.metrics = metrics
        self._backoff = backoff or Backoff()
        self._shutdown_timeout = shutdown_timeout_s
        self._factory = flow_factory
        self._probe_interval = probe_interval_s
        self._answers = answers
        self.stopping = asyncio.Event()
        self.states = {s.name: FlowState(s.name) for s, _ in self._flows}
        self.plane = ControlPlane()
        """Pauses, failed topics and rate limits of the flows (the admin API's)."""
        for s, _ in self._flows:
            self.plane.add(s)
        self.on_reload: Callable[[], Awaitable[Any]] | None = None
        """What SIGHUP runs: re-read the topology and :meth:`apply` it (set by `aa run`)."""
        self._stops: dict[str, asyncio.Event] = {}
        self._keepers: dict[str, asyncio.Task[None]] = {}
        self._group: asyncio.TaskGroup | None = None
        self._reloads: set[asyncio.Future[Any]] = set()  # held until done
        self.extra_tasks: list[Callable[[asyncio.Event], Any]] = []
        """Background loops, run and restarted like flows; give them a ``name`` attribute
        (:class:`aa.background.BackgroundTask`) for their metrics and `/healthz` entry."""
        self.task_states: dict[str, FlowState] = {}
        self._live: dict[str, RunningFlow] = {}
        self.stopped_by: int | None = None
        """The signal that stopped the process (SIGINT makes `aa run` exit 130), if one did."""

    def stop(self, sig: int | None = None) -> None:
        if sig is not None and self.stopped_by is None:
            self.stopped_by = sig
        self.stopping.set()
        for stop in self._stops.values():
            stop.set()

    def live(self, name: str) -> RunningFlow | None:
        """The flow's current run (``None`` before its first)."""
        return self._live.get(name)

    @property
    def flows(self) -> list[tuple[FlowSettings, Router]]:
        """The flows the process runs now (a reload changes them)."""
        return list(self._flows)

    def _start(self, settings: FlowSettings, router: Router) -> None:
        assert self._group is not None
        self._stops[settings.name] = stop = asyncio.Event()
        if self.stopping.is_set():
            stop.set()
        task = self._group.create_task(self._keep(settings, router, stop), name=settings.name)
        self._keepers[settings.name] = task

    async def _retire(self, name: str) -> None:
        """Stop one flow as at shutdown (drained, committed) and wait for it."""
        self._stops[name].set()
        task = self._keepers.pop(name)
        _, late = await asyncio.wait([task], timeout=self._shutdown_timeout)
        for t in late:
            dump_tasks("reload_timeout", {t})
            t.cancel()
        del self._stops[name]

    async def apply(self, flows: Sequence[tuple[FlowSettings, Router]], plan: ReloadPlan) -> None:
        """Run ``flows`` from now on, touching only the flows ``plan`` names: removed and
        restarted ones are stopped (drained, committed), added and restarted ones started,
        new rate limits applied to running flows; unchanged flows are not touched."""
        new = {s.name: (s, r) for s, r in flows}
        for name in (*plan.removed, *plan.restarted):
            if name in self._keepers:
                await self._retire(name)
        for name in plan.removed:
            self.states.pop(name, None)
            self._live.pop(name, None)
            self.plane.remove(name)
        for name in (*plan.retuned, *plan.unchanged):
            self.plane.add(new[name][0])
        for name in (*plan.added, *plan.restarted):
            settings, router = new[name]
            restarts = self.states[name].restarts if name in self.states else 0
            self.states[name] = FlowState(name, restarts=restarts)
            self.plane.add(settings)
            if self._group is not None:
                self._start(settings, router)
        self._flows = [new[name] for name in sorted(new)]
        log.info("reloaded", **plan.show())

    def health(self) -> tuple[bool, dict[str, Any]]:
        """``ok`` says every flow runs; ``tasks`` shows the background loops, and ``degraded``
        is true while one of them is backing off after a failure or parked as failed (it does
        not make ``ok`` false: copying goes on)."""

        def show(st: FlowState) -> dict[str, Any]:
            out = {"state": st.state, "restarts": st.restarts, "last_error": st.last_error}
            return {**out, "waiting": st.waiting} if st.waiting else out

        flows = {n: show(st) for n, st in self.states.items()}
        for n, flow in self._live.items():
            error = getattr(flow, "topic_sync_error", None)
            if error is not None and n in flows:
                flows[n]["topic_sync_error"] = error
        for n, control in self.plane.controls.items():
            if n in flows:
                flows[n].update(control.summary())
        tasks = {n: show(st) for n, st in self.task_states.items()}
        ok = all(st.state in ("running", "starting") for st in self.states.values())
        degraded = any(st.state in ("backoff", "failed") for st in self.task_states.values())
        return ok, {"flows": flows, "tasks": tasks, "degraded": degraded}

    async def run(self, *, install_signals: bool = True) -> None:
        handlers: dict[signal.Signals, Callable[[], object]] = {
            signal.SIGTERM: functools.partial(self.stop, signal.SIGTERM),
            signal.SIGINT: functools.partial(self.stop, signal.SIGINT),
            signal.SIGUSR1: functools.partial(dump_tasks, "SIGUSR1"),
            signal.SIGHUP: self._reload_on_signal,
        }
        with loop_signals(asyncio.get_running_loop(), handlers if install_signals else {}):
            try:
                # A keeper never raises (it restarts or parks its flow); if one does, the group
                # cancels the others and the error propagates: nothing dies silently.
                async with asyncio.TaskGroup() as tg:
                    self._group = tg
                    for s, r in self._flows:
                        self._start(s, r)
                    tasks: list[asyncio.Task[None]] = []
                    for i, extra in enumerate(self.extra_tasks):
                        name = str(getattr(extra, "name", None) or f"task-{i}")
                        self.task_states[name] = FlowState(name)
                        tasks.append(tg.create_task(self._keep_task(name, extra), name=name))
                    await self.stopping.wait()
                    log.info("shutdown_started", timeout_s=self._shutdown_timeout)
                    await self._shut_down([*self._keepers.values(), *tasks])
            finally:
                self._group = None
        log.info("shutdown_complete")

    async def _shut_down(self, tasks: list[asyncio.Task[None]]) -> None:
        """Wait up to the shutdown timeout for every task; dump and cancel the late ones (the
        task group then awaits them)."""
        _, late = await asyncio.wait(tasks, timeout=self._shutdown_timeout) if tasks else ((), ())
        if late:
            dump_tasks("shutdown_timeout")  # every task: the stuck one may wait on another
        for t in late:
            log.warning("shutdown_timeout", task=t.get_name())
            t.cancel()

    def _reload_on_signal(self) -> None:
        if self.on_reload is None:
            log.warning("reload_ignored", reason="this process cannot reload")
            return
        task = asyncio.ensure_future(self.on_reload())
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)

    async def _keep(self, settings: FlowSettings, router: Router, stop: asyncio.Event) -> None:
        """Run one flow until stopped; restart it with backoff when it fails."""
        state = self.states[settings.name]
        labels = settings.labels
        streak = Streak()
        while not stop.is_set():
            flow = self._factory(settings, router, self.metrics)
            flow.load_control = partial(self.plane.load, settings.name)
            self._live[settings.name] = flow
            state.state, state.since = "running", time.time()
            dcs = (
                (settings.source, settings.source_client),
                (settings.target, settings.target_client),
            )
            try:
                await self._watching(flow.run(stop), dcs, state, stop)
            except FlowError as exc:
                state.last_error = str(exc)
                if not exc.retriable:
                    state.state = "failed"
                    log.error("flow_failed", flow=settings.name, kind=exc.kind, error=str(exc))
                    return
                self.metrics.errors.labels(**labels, kind=exc.kind).inc()
                parked = streak.failed(state, exc)
            except Exception as exc:  # any other failure: log, count, restart or park
                state.last_error = repr(exc)
                self.metrics.errors.labels(**labels, kind=type(exc).__name__).inc()
                if is_crash(exc):
                    log.error("flow_crashed", flow=settings.name, error=repr(exc), exc_info=exc)
                parked = streak.failed(state, exc)
            else:
                state.state = "stopped"
                return
            if parked is not None:
                state.state, state.last_error = "failed", parked
                log.error("flow_failed", flow=settings.name, kind="crash", error=parked)
                return
            delay = streak.delay(self._backoff)
            state.state, state.restarts = "backoff", state.restarts + 1
            self.metrics.restarts.labels(**labels).inc()
            log.warning(
                "flow_restarting",
                flow=settings.name,
                in_s=delay,
                error=state.last_error,
                restarts=state.restarts,
            )
            await self._back_off(settings.name, delay, dcs, stop, state)
        state.state = "stopped"

    async def _watching(
        self,
        run: Awaitable[None],
        dcs: Sequence[tuple[str, Mapping[str, Any]]],
        state: FlowState,
        stop: asyncio.Event,
    ) -> None:
        """Await a flow's ``run`` while asking every 3 probe intervals whether its DCs answer: a
        running flow whose source is away copies nothing and fails nothing (its clients retry),
        so `/healthz` and `aa status` say ``waiting: SF unreachable since ...`` instead."""

        async def watch() -> None:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 3 * self._probe_interval)
                if not stop.is_set():
                    await self._note_reach(dcs, state)

        watcher = asyncio.ensure_future(watch())
        try:
            await run
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _note_reach(
        self, dcs: Sequence[tuple[str, Mapping[str, Any]]], state: FlowState | None
    ) -> list[str]:
        """The DCs of ``dcs`` that do not answer, noted in ``state`` (since when)."""
        down = [dc for dc, c in dcs if not await self._answers(c)]
        if state is not None:
            now = time.time()
            for dc, _ in dcs:
                if dc in down:
                    state.unreachable.setdefault(dc, now)
                else:
                    state.unreachable.pop(dc, None)
        return down

    async def _back_off(
        self,
        name: str,
        delay: float,
        clients: Sequence[tuple[str, Mapping[str, Any]]],
        stop: asyncio.Event | None = None,
        state: FlowState | None = None,
    ) -> None:
        """Wait ``delay`` before restarting ``name``, or less: once one of the DCs it needs
        (``clients``) was seen down and then they all answer again, it restarts at once (a
        backoff grown to 60 s while the DC was away would otherwise hold it back that long
        after the DC returned). A failure with every DC answering waits its whole backoff, so
        it cannot restart every probe. A DC that does not answer is noted in ``state``
        (``waiting``) from the failure before, until it answers."""
        loop = asyncio.get_running_loop()
        stop = stop or self.stopping
        end = loop.time() + delay
        seen_down = False
        step = self._probe_interval if clients else delay  # nothing to ask: wait it out
        while not stop.is_set() and (left := end - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), min(left, step))
            if stop.is_set() or loop.time() >= end:
                return
            if not await self._note_reach(clients, state):
                if seen_down:
                    log.info("dc_back", restarting=name)
                    return
            else:
                seen_down = True

    async def _keep_task(self, name: str, run: Callable[[asyncio.Event], Any]) -> None:
        """Run one background loop until stopped; restart it with backoff when it fails."""
        state = self.task_states[name]
        streak = Streak()
        while not self.stopping.is_set():
            state.state, state.since = "running", time.time()
            failure: BaseException | None = None
            try:
                await run(self.stopping)
            except (
                Exception
            ) as exc:  # any crash: log with cause, count, restart (logged, so BLE ok)
                state.last_error, failure = repr(exc), exc
                if not is_crash(exc):  # explained: a DC down, a refusal
                    log.error("background_task_failed", task=name, error=repr(exc))
                else:  # a crash: its traceback
                    log.error("background_task_failed", task=name, error=repr(exc), exc_info=exc)
            else:
                if self.stopping.is_set():
                    break
                state.last_error = "returned before stop"  # a defect too: counts as a crash
                failure = RuntimeError(state.last_error)
                log.error("background_task_failed", task=name, error=state.last_error)
            self.metrics.background_failures.labels(task=name).inc()
            parked = streak.failed(state, failure)
            if (denied := refused_by_acl(failure)) is not None:
                parked = (
                    f"{name}: an ACL refused it ({denied!r}); no restart gets past an ACL, so it "
                    "is not restarted: grant what docs/operations.md (ACLs) lists, then restart aa"
                )
            if parked is not None:
                state.state, state.last_error = "failed", parked
                log.error("background_task_stopped_restarting", task=name, error=parked)
                return
            delay = self._backoff.delay(streak.attempt)
            state.state, state.restarts = "backoff", state.restarts + 1
            log.warning(
                "background_task_restarting", task=name, in_s=delay, restarts=state.restarts
            )
            await self._back_off(name, delay, [("", c) for c in getattr(run, "clients", ())])
        state.state = "stopped"
