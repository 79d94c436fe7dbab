"""How a supervised flow or background loop is restarted: its state as `/healthz` shows it,
the backoff between tries, and the crash streak that parks it (see :mod:`aa.mirror.supervisor`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from aa.mirror.errors import is_crash
from aa.mirror.pending import TopicsFailed

CRASH_LIMIT = 5
"""Crashes in a row (none after a healthy run) before a flow or loop is parked as failed."""

HEALTHY_RUN_S = 60.0
"""A run that lasted this long was healthy: the backoff and the crash count start again."""


@dataclass(slots=True)
class FlowState:
    """What `/healthz` and `aa status` report about one flow."""

    name: str
    state: str = "starting"  # starting | running | backoff | failed | stopped
    restarts: int = 0
    last_error: str | None = None
    since: float = field(default_factory=time.time)
    unreachable: dict[str, float] = field(default_factory=dict)
    """DCs the flow needs that did not answer, since when (cleared when they answer)."""

    @property
    def waiting(self) -> str | None:
        """``SF unreachable since 2026-11-27T20:01:02Z`` while a DC it needs is away."""
        if not self.unreachable:
            return None
        return "; ".join(
            f"{dc} unreachable since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))}"
            for dc, t in sorted(self.unreachable.items())
        )


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
    at_once: bool = False
    """The last run ended for topics the target refused (:class:`TopicsFailed`): they are
    paused now, so the flow starts again at once, and the streak does not count it."""

    def failed(self, state: FlowState, exc: BaseException | None) -> str | None:
        """Count a failed run; the message to park it with when crashes reached the limit."""
        self.at_once = isinstance(exc, TopicsFailed)
        if self.at_once:
            return None
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

    def delay(self, backoff: Backoff) -> float:
        """Seconds to wait before the next run."""
        return 0.0 if self.at_once else backoff.delay(self.attempt)
