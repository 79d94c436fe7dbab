"""The control plane of one `aa run` process: pause, resume and rate limits of its flows, as
the admin API and ``aa pause``/``aa resume``/``aa limit`` ask for them.

A change is stored in the flow's control topic first (:mod:`aa.mirror.control_store`), then
applied: a pause the process cannot store (the target DC down) is refused with the reason,
never applied in memory only, so what a restart restores is what the operator was told.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aa.errors import AaError
from aa.logs import get_logger
from aa.mirror.control import FlowControl, Pause, Scope
from aa.mirror.control_store import ControlStore
from aa.mirror.settings import FlowSettings

log = get_logger("aa.control")

StoreFactory = Callable[[FlowSettings], ControlStore]


class UnknownFlow(AaError):
    """The flow named is not run by this process."""


class ControlPlane:
    """The :class:`FlowControl` of every flow the process runs, kept across the flow's
    restarts and reloads that do not remove it."""

    def __init__(self, store: StoreFactory = ControlStore) -> None:
        self.controls: dict[str, FlowControl] = {}
        self.settings: dict[str, FlowSettings] = {}
        self._store = store

    def add(self, settings: FlowSettings) -> FlowControl:
        """The control of ``settings.name`` (made on first use), following the settings' rate
        limit unless one was set through the API."""
        control = self.controls.get(settings.name)
        if control is None:
            control = self.controls[settings.name] = FlowControl(settings.name)
        self.settings[settings.name] = settings
        if control.rate_override is None:
            control.throttle.set_rate(settings.max_bytes_per_s)
        return control

    def remove(self, name: str) -> None:
        self.controls.pop(name, None)
        self.settings.pop(name, None)

    def _flow(self, name: str) -> tuple[FlowControl, FlowSettings]:
        if name not in self.controls:
            known = ", ".join(sorted(self.controls)) or "none"
            raise UnknownFlow(f"flow {name!r} is not run by this process; its flows: {known}")
        return self.controls[name], self.settings[name]

    async def load(self, name: str) -> FlowControl:
        """The flow's control with its stored pauses read (once per process)."""
        control, settings = self._flow(name)
        if not control.loaded:
            await self._store(settings).load(control)
            if control.rate_override is not None:
                control.throttle.set_rate(control.rate_override)
        return control

    async def pause(self, scope: Scope, note: str = "") -> Pause:
        control, settings = self._flow(scope.flow)
        pause = Pause(scope, time.time(), note)
        await self._store(settings).write_pause(pause)
        control.pause(pause)
        log.info("flow_paused", scope=scope.key, note=note)
        return pause

    async def resume(self, scope: Scope) -> list[str]:
        control, settings = self._flow(scope.flow)
        await self._store(settings).write_resume(control.pauses_within(scope))
        done = control.resume(scope)
        log.info("flow_resumed", scope=scope.key, lifted=done)
        return done

    async def set_rate(self, flow: str, rate: float | None) -> float:
        """Set the flow's rate limit (``None``: back to the topology's); the rate now."""
        control, settings = self._flow(flow)
        await self._store(settings).write_rate(rate)
        now = control.set_rate(rate, settings.max_bytes_per_s)
        log.info("flow_rate_limit", flow=flow, bytes_per_s=now or None)
        return now

    def show(self, topics: Callable[[str], list[str]] | None = None) -> dict[str, Any]:
        return {
            name: c.show(topics(name) if topics is not None else ())
            for name, c in sorted(self.controls.items())
        }
