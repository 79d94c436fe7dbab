"""A running `aa run` process as the admin API sees it (:class:`aa.protocols.ProcessControl`):
the state of its flows, topics and partitions; pause, resume, rate limits; reload.

Reload re-reads the topology file the process started with and runs the same selection
(``--dc`` or ``--flow``); a file that does not load, or whose flows do not build, is refused
with the same error as at start and nothing changes. Otherwise only the flows whose settings
changed are touched (:mod:`aa.mirror.reload`). What a reload does not change: the process's
own settings (``metrics``, ``heartbeats``, ``checkpoints``, the memory budget when the number
of flows stays the same) and its background loops; `reload` lists them under
``restart_needed`` when they differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from aa.config import Topology, load_config
from aa.errors import AaError
from aa.logs import get_logger
from aa.mirror.build import build_flows, select_flows
from aa.mirror.control import Scope
from aa.mirror.reload import plan_reload, signature
from aa.mirror.supervisor import Supervisor

log = get_logger("aa.reload")

PROCESS_SECTIONS = ("metrics", "heartbeats", "checkpoints")
"""Settings of the process itself: a reload cannot apply them (a restart does)."""


class RunningProcess:
    """Implements :class:`aa.protocols.ProcessControl` for one `aa run`."""

    def __init__(
        self,
        supervisor: Supervisor,
        topology: Topology,
        *,
        dc: str | None,
        flow: str | None,
        load: Callable[[str], Topology] = load_config,
    ) -> None:
        self.supervisor = supervisor
        self.topology = topology
        self._dc, self._flow = dc, flow
        self._load = load
        self._lock = asyncio.Lock()
        self.reloads = 0

    def _signatures(self, topology: Topology, flows: list[Any]) -> dict[str, Any]:
        return {
            s.name: (signature(topology, topology.flow(s.name), s), s.max_bytes_per_s)
            for s, _ in flows
        }

    async def reload(self) -> dict[str, Any]:
        async with self._lock:  # one reload at a time: SIGHUP and the API may cross
            path = self.topology.source_file
            if not path:
                raise AaError("this process was not started from a topology file")
            try:
                new = self._load(path)
                flows = build_flows(new, select_flows(new, dc=self._dc, flow=self._flow))
            except AaError as exc:
                log.error("reload_refused", file=path, error=str(exc))
                raise AaError(f"reload refused, nothing changed: {exc}") from None
            old = self._signatures(self.topology, self.supervisor.flows)
            plan = plan_reload(old, self._signatures(new, flows))
            await self.supervisor.apply(flows, plan)
            stale = [s for s in PROCESS_SECTIONS if getattr(new, s) != getattr(self.topology, s)]
            self.topology = new
            self.reloads += 1
            if stale:
                log.warning("reload_restart_needed", sections=stale)
            return {"ok": True, "file": path, **plan.show(), "restart_needed": stale}

    async def on_signal(self) -> None:
        """SIGHUP: reload; an invalid file is logged (``reload_refused``), never raised."""
        with contextlib.suppress(AaError):  # logged by reload; the flows go on as they were
            await self.reload()

    def state(self) -> dict[str, Any]:
        sup = self.supervisor
        _, health = sup.health()
        now = time.time()
        flows: dict[str, Any] = {}
        for name, entry in health["flows"].items():
            control = sup.plane.controls.get(name)
            live = sup.live(name)
            parts = live.partitions() if live is not None else {}
            topics: dict[str, Any] = {}
            for tp, behind in sorted(parts.items()):
                t = topics.setdefault(tp.topic, {"partitions": {}})
                blocked = control is not None and control.blocks(tp, now)
                t["partitions"][str(tp.partition)] = {
                    "state": "paused" if blocked else _moving(behind),
                    "behind": behind,
                }
            shown = control.show(topics) if control is not None else {"topics": {}}
            for topic, info in shown["topics"].items():
                t = topics.setdefault(topic, {"partitions": {}})
                t.update(info)
                if info["state"] == "running" and any(
                    p["state"] == "catching-up" for p in t["partitions"].values()
                ):
                    t["state"] = "catching-up"
            flows[name] = {
                **entry,
                "topics": topics,
                "paused": shown.get("paused", []),
                "rate_limit_bytes_per_s": shown.get("rate_limit_bytes_per_s"),
            }
        return {"flows": flows, "tasks": health["tasks"], "reloads": self.reloads}

    async def pause(
        self, flow: str, topic: str | None, partition: int | None, note: str
    ) -> dict[str, Any]:
        pause = await self.supervisor.plane.pause(Scope(flow, topic, partition), note)
        return {"ok": True, "paused": pause.show()}

    async def resume(self, flow: str, topic: str | None, partition: int | None) -> dict[str, Any]:
        lifted = await self.supervisor.plane.resume(Scope(flow, topic, partition))
        return {"ok": True, "resumed": lifted}

    async def set_rate(self, flow: str, bytes_per_s: float | None) -> dict[str, Any]:
        rate = await self.supervisor.plane.set_rate(flow, bytes_per_s)
        return {"ok": True, "flow": flow, "rate_limit_bytes_per_s": rate or None}


def _moving(behind: int | None) -> str:
    return "catching-up" if behind else "running"
