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
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aa.admin import metadata_failure
from aa.logs import get_logger
from aa.mirror.errors import is_crash, refused_by_acl
from aa.mirror.flow import FlowError, MirrorFlow
from aa.mirror.settings import FlowSettings
from aa.mirror.types import Router
from aa.observe.metrics import Metrics

log = get_logger("aa.supervisor")

CRASH_LIMIT = 5
"""Crashes in a row (none after a healthy run) before a flow or loop is parked as failed."""

HEALTHY_RUN_S = 60.0
"""A run that lasted this long was healthy: the backoff and the crash count start again."""


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


@dataclass(slots=True)
class FlowState:
    """What `/healthz` and `aa status` report about one flow."""

    name: str
    state: str = "starting"  # starting | running | backoff | failed | stopped
    restarts: int = 0
    last_error: str | None = None
    since: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class Backoff:
    initial_s: float = 1.0
    max_s: float = 60.0
    factor: float = 2.0

    def delay(self, attempt: int) -> float:
        # the exponent is capped: a DC down for a day fails ~1,440 restarts, and 2.0 ** 1024
        # overflows (it raised in the keeper and took every flow of the process down)
        exponent = min(max(0, attempt - 1), 64)
        return float(min(self.max_s, self.initial_s * self.factor**exponent))


@dataclass(slots=True)
class Streak:
    """The failures of one flow or loop since its last healthy run."""

    attempt: int = 0
    crashes: int = 0

    def failed(self, state: FlowState, exc: BaseException | None) -> str | None:
        """Count a failed run; the message to park it with when crashes reached the limit."""
        healthy = time.time() - state.since >= HEALTHY_RUN_S
        self.attempt = 1 if healthy else self.attempt + 1
        self.crashes = (0 if healthy else self.crashes) + int(exc is not None and is_crash(exc))
        if self.crashes < CRASH_LIMIT:
            return None
        return (
            f"{state.name} crashed {self.crashes} times in a row, each within a minute of "
            f"starting, last with {exc!r}; not restarted again, since restarting does not get "
            "past it. This is a defect in aa or an input it does not expect: report it with the "
            "tracebacks logged before this line, then restart the process"
        )


class Supervisor:
    """Owns the flows of one process. ``run`` returns when stopped (signal or ``stop()``)."""

    def __init__(
        self,
        flows: Sequence[tuple[FlowSettings, Router]],
        metrics: Metrics,
        *,
        backoff: Backoff | None = None,
        shutdown_timeout_s: float = 30.0,
        flow_factory: Callable[[FlowSettings, Router, Metrics], MirrorFlow] = MirrorFlow,
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
        self.extra_tasks: list[Callable[[asyncio.Event], Any]] = []
        """Background loops, run and restarted like flows; give them a ``name`` attribute
        (:class:`aa.background.BackgroundTask`) for their metrics and `/healthz` entry."""
        self.task_states: dict[str, FlowState] = {}
        self._live: dict[str, MirrorFlow] = {}

    def stop(self) -> None:
        self.stopping.set()

    def health(self) -> tuple[bool, dict[str, Any]]:
        """``ok`` says every flow runs; ``tasks`` shows the background loops, and ``degraded``
        is true while one of them is backing off after a failure or parked as failed (it does
        not make ``ok`` false: copying goes on)."""

        def show(st: FlowState) -> dict[str, Any]:
            return {"state": st.state, "restarts": st.restarts, "last_error": st.last_error}

        flows = {n: show(st) for n, st in self.states.items()}
        for n, flow in self._live.items():
            error = getattr(flow, "topic_sync_error", None)
            if error is not None and n in flows:
                flows[n]["topic_sync_error"] = error
        tasks = {n: show(st) for n, st in self.task_states.items()}
        ok = all(st.state in ("running", "starting") for st in self.states.values())
        degraded = any(st.state in ("backoff", "failed") for st in self.task_states.values())
        return ok, {"flows": flows, "tasks": tasks, "degraded": degraded}

    async def run(self, *, install_signals: bool = True) -> None:
        loop = asyncio.get_running_loop()
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
            loop.add_signal_handler(signal.SIGUSR1, dump_tasks, "SIGUSR1")
        try:
            # A keeper never raises (it restarts or parks its flow); if one does, the group
            # cancels the others and the error propagates: nothing dies silently.
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(self._keep(s, r), name=s.name) for s, r in self._flows]
                for i, extra in enumerate(self.extra_tasks):
                    name = str(getattr(extra, "name", None) or f"task-{i}")
                    self.task_states[name] = FlowState(name)
                    tasks.append(tg.create_task(self._keep_task(name, extra), name=name))
                await self.stopping.wait()
                log.info("shutdown_started", timeout_s=self._shutdown_timeout)
                await self._shut_down(tasks)
        finally:
            if install_signals:
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
                    loop.remove_signal_handler(sig)
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

    async def _keep(self, settings: FlowSettings, router: Router) -> None:
        """Run one flow until stopped; restart it with backoff when it fails."""
        state = self.states[settings.name]
        labels = settings.labels
        streak = Streak()
        while not self.stopping.is_set():
            flow = self._factory(settings, router, self.metrics)
            self._live[settings.name] = flow
            state.state, state.since = "running", time.time()
            try:
                await flow.run(self.stopping)
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
            delay = self._backoff.delay(streak.attempt)
            state.state, state.restarts = "backoff", state.restarts + 1
            self.metrics.restarts.labels(**labels).inc()
            log.warning(
                "flow_restarting",
                flow=settings.name,
                in_s=delay,
                error=state.last_error,
                restarts=state.restarts,
            )
            await self._back_off(
                settings.name, delay, (settings.source_client, settings.target_client)
            )
        state.state = "stopped"

    async def _back_off(
        self, name: str, delay: float, clients: Sequence[Mapping[str, Any]]
    ) -> None:
        """Wait ``delay`` before restarting ``name``, or less: once one of the DCs it needs
        (``clients``) was seen down and then they all answer again, it restarts at once (a
        backoff grown to 60 s while the DC was away would otherwise hold it back that long
        after the DC returned). A failure with every DC answering waits its whole backoff, so
        it cannot restart every probe."""
        loop = asyncio.get_running_loop()
        end = loop.time() + delay
        seen_down = False
        step = self._probe_interval if clients else delay  # nothing to ask: wait it out
        while not self.stopping.is_set() and (left := end - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), min(left, step))
            if self.stopping.is_set() or loop.time() >= end:
                return
            if all([await self._answers(c) for c in clients]):
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
            await self._back_off(name, delay, getattr(run, "clients", ()))
        state.state = "stopped"
