"""Catch-up progress of `aa run`: per flow, the records still to copy, the copy rate and the
time left, logged while a flow is behind (``catching_up``, then ``caught_up`` once) and shown in
`/healthz` under ``catch_up`` (which `aa status` displays).

It reads the process's own metrics (records copied, committed lag exported by the lag loop), so
it adds no Kafka request. While the lag loop cannot read (the source DC is down), the lag gauge
keeps its last value: the line then carries ``lag_stale_s`` (how old the figure is) and no ETA."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.metrics_core import Metric

from aa.cli.status_model import families_by_flow
from aa.logs import get_logger
from aa.observe.metrics import Metrics

INTERVAL_S = 10.0
log = get_logger("aa.run")


@dataclass(slots=True)
class CatchUp:
    """Pure: fed ``(now, {flow: {"records": n, "lag_records": m, "lag_read_at": t}})``
    samples, it keeps each flow's rate (records per second between the last two samples) and
    ETA. A lag read older than ``stale_after_s`` (wall clock ``wall`` against the metric's
    ``lag_read_at``) is reported as stale, with no ETA computed from it."""

    stale_after_s: float | None = None
    flows: dict[str, dict[str, float | None]] = field(default_factory=dict)
    _last: dict[str, tuple[float, float]] = field(default_factory=dict)

    def sample(
        self, now: float, metrics: dict[str, dict[str, float]], *, wall: float | None = None
    ) -> list[dict[str, Any]]:
        """Update; return the log events to emit (one per flow behind or just caught up)."""
        events = []
        for name, m in metrics.items():
            if "->" not in name or ("records" not in m and "lag_records" not in m):
                continue
            records = m.get("records", 0.0)
            remaining = m.get("lag_records")
            prev = self._last.get(name)
            self._last[name] = (now, records)
            rate = None
            if prev is not None and now > prev[0]:
                rate = max(0.0, (records - prev[1]) / (now - prev[0]))
            stale = self._staleness(m.get("lag_read_at"), wall)
            eta = None
            if remaining and rate and stale is None:
                eta = remaining / rate
            was = self.flows.get(name, {}).get("remaining")
            self.flows[name] = {"remaining": remaining, "rate": rate, "eta_s": eta}
            if stale is not None:
                self.flows[name]["lag_stale_s"] = stale
            if remaining:
                event = {
                    "event": "catching_up",
                    "flow": name,
                    "remaining": int(remaining),
                    "rate": None if rate is None else round(rate, 1),
                    "eta_s": None if eta is None else round(eta, 1),
                }
                if stale is not None:
                    event["lag_stale_s"] = stale
                events.append(event)
            elif was:
                events.append({"event": "caught_up", "flow": name})
        return events

    def _staleness(self, read_at: float | None, wall: float | None) -> float | None:
        """Seconds since the lag was last read, when that is longer than ``stale_after_s``."""
        if self.stale_after_s is None or read_at is None or wall is None:
            return None
        age = round(wall - read_at, 1)
        return age if age > self.stale_after_s else None


def catch_up_task(
    metrics: Metrics,
    tracker: CatchUp,
    interval_s: float = INTERVAL_S,
    heartbeats: Callable[[str], bool] | None = None,
) -> Callable[[asyncio.Event], Any]:
    """The loop of ``tracker``; ``heartbeats`` names the topics of aa's heartbeats, which are
    not the user's data (an idle flow copies one a second: it is not catching up)."""

    async def run(stop: asyncio.Event) -> None:
        while not stop.is_set():
            page = families_by_flow(_families(metrics), heartbeats)
            for e in tracker.sample(time.monotonic(), page, wall=time.time()):
                name = e.pop("event")
                log.info(name, **e)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval_s)

    return run


def _families(metrics: Metrics) -> Iterator[Metric]:
    """The families a sample reads, straight from the process's own collectors: rendering the
    whole `/metrics` page and parsing it back for them was ~5% of a W3 process's CPU."""
    for collector in (metrics.records, metrics.committed_lag, metrics.lag_read_at):
        yield from collector.collect()
