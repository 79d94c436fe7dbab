"""The control state of one flow: what an operator paused (the flow, a topic, a partition),
which topics failed and why, and its rate limit in bytes per second.

One :class:`FlowControl` per flow lives as long as the process: the supervisor changes it
(admin API, ``aa pause``), each run of the flow reads it. Pauses are also kept in the flow's
control topic on the target (:mod:`aa.mirror.control_store`), so they survive a restart.
A paused or failed partition is paused in the source consumer: it fetches nothing, so its
position, and the commits that follow it, stay where they were; records of it fetched before
the pause and not yet returned are dropped by the consumer and fetched again on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiokafka import TopicPartition

from aa.errors import AaError

TopicState = Literal["running", "paused", "failed"]

TOPIC_RETRY_S = 10.0
"""A failed topic is tried again this long after it failed, then twice as long each time..."""
TOPIC_RETRY_MAX_S = 300.0
"""...up to this (or at once on ``aa resume``)."""

STOP_CHECK_S = 0.25
"""A flow held back by its rate limit looks this often whether it was asked to stop."""


@dataclass(frozen=True, slots=True)
class Scope:
    """What a pause covers: a whole flow, one of its topics, or one partition of a topic."""

    flow: str
    topic: str | None = None
    partition: int | None = None

    def __post_init__(self) -> None:
        if self.partition is not None and self.topic is None:
            raise AaError("a partition needs its topic: give --topic with --partition")
        if self.partition is not None and self.partition < 0:
            raise AaError(f"partition {self.partition}: partitions count from 0")

    @property
    def key(self) -> str:
        """How the scope is stored: ``flow``, ``flow/topic`` or ``flow/topic/partition``."""
        parts = [self.flow, self.topic, None if self.partition is None else str(self.partition)]
        return "/".join(p for p in parts if p is not None)

    def within(self, outer: Scope) -> bool:
        """Whether this scope lies inside ``outer`` (a partition inside its topic, a topic
        inside its flow, a scope inside itself)."""
        return (
            self.flow == outer.flow
            and (outer.topic is None or outer.topic == self.topic)
            and (outer.partition is None or outer.partition == self.partition)
        )

    def covers(self, tp: TopicPartition) -> bool:
        return (self.topic is None or self.topic == tp.topic) and (
            self.partition is None or self.partition == tp.partition
        )

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Pause:
    """An operator's pause: since when, and the note given with it."""

    scope: Scope
    at: float
    note: str = ""

    def show(self) -> dict[str, Any]:
        return {"scope": self.scope.key, "since": self.at, "note": self.note}


@dataclass(slots=True)
class TopicFailure:
    """A topic stopped by a refusal no retry fixes: its partitions are paused, nothing of it is
    committed past ``offset`` (its first uncopied record), and it is tried again at
    ``retry_at`` (with backoff), or at once on ``aa resume``."""

    topic: str
    partition: int
    offset: int
    reason: str
    since: float = field(default_factory=time.time)
    attempts: int = 1
    retry_at: float = 0.0
    kind: str = ""
    """What refused it (``not-authorized``: the target's ACL; see :class:`TopicRefusal`)."""
    target: str = ""
    """The target topic that refused it."""

    def show(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "offset": self.offset,
            "reason": self.reason,
            "since": self.since,
            "attempts": self.attempts,
            "retry_at": self.retry_at,
        }


class Throttle:
    """A token bucket over the bytes a flow fetches: :meth:`spend` waits while the flow is
    ahead of ``rate`` (0: no limit). The rate may change at any moment; a wait in progress
    follows the new rate at once. The bucket holds at most one second of the rate, so a flow
    idle for a while does not then burst past the limit for long."""

    def __init__(self, rate: float = 0.0) -> None:
        self._rate = rate
        self._tokens = 0.0
        self._at = time.monotonic()
        self._changed = asyncio.Event()

    @property
    def rate(self) -> float:
        return self._rate

    def set_rate(self, rate: float) -> None:
        self._refill()
        self._rate = max(0.0, rate)
        self._tokens = min(self._tokens, self._rate)
        self._changed.set()

    def _refill(self) -> None:
        now = time.monotonic()
        if self._rate > 0:
            self._tokens = min(self._rate, self._tokens + (now - self._at) * self._rate)
        self._at = now

    async def spend(self, n: int, stop: asyncio.Event | None = None) -> None:
        """Take ``n`` bytes; returns once the bucket has paid for them, or ``stop`` is set
        (looked at every :data:`STOP_CHECK_S`)."""
        self._refill()
        if self._rate <= 0 or n <= 0:
            return
        self._tokens -= n
        while self._rate > 0 and self._tokens < 0 and not (stop is not None and stop.is_set()):
            self._changed.clear()
            wait = min(-self._tokens / self._rate, STOP_CHECK_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)
            self._refill()
        if self._rate <= 0:
            self._tokens = 0.0


class FlowControl:
    """The live control state of one flow (see the module doc)."""

    def __init__(self, flow: str, rate_bytes_per_s: float = 0.0) -> None:
        self.flow = flow
        self.pauses: dict[str, Pause] = {}
        self.failures: dict[str, TopicFailure] = {}
        self.throttle = Throttle(rate_bytes_per_s)
        self.rate_override: float | None = None
        """A rate set through the admin API; ``None``: the topology's (``tuning``)."""
        self.version = 0
        """Bumped by every change: a run re-applies the state to its consumer when it moved."""
        self.loaded = False
        """The stored pauses were read (once per process; a run waits for it)."""
        self.retry_s = TOPIC_RETRY_S
        self.retry_max_s = TOPIC_RETRY_MAX_S

    def _changed(self) -> None:
        self.version += 1

    def pause(self, pause: Pause) -> None:
        self.pauses[pause.scope.key] = pause
        self._changed()

    def pauses_within(self, scope: Scope) -> list[Scope]:
        """The paused scopes a resume of ``scope`` lifts."""
        return [p.scope for p in self.pauses.values() if p.scope.within(scope)]

    def resume(self, scope: Scope) -> list[str]:
        """Lift the pauses ``scope`` covers (a flow's resume lifts its topics' and partitions'
        too) and retry at once the failed topics it covers; what was lifted."""
        lifted = [s.key for s in self.pauses_within(scope)]
        for k in lifted:
            del self.pauses[k]
        for topic, failure in self.failures.items():
            if scope.topic in (None, topic):
                failure.retry_at = 0.0
                lifted.append(f"{self.flow}/{topic} (failed)")
        self._changed()
        return lifted

    def fail_topic(self, failure: TopicFailure) -> TopicFailure:
        """Mark ``failure.topic`` failed: its partitions pause, and are tried again after
        :attr:`retry_s` (doubling with each failed try, up to :attr:`retry_max_s`). The one
        entry point for anything that fails a topic of the flow with a reason."""
        old = self.failures.get(failure.topic)
        if old is not None:
            failure.attempts, failure.since = old.attempts + 1, old.since
        backoff = min(self.retry_max_s, self.retry_s * 2 ** min(failure.attempts - 1, 32))
        failure.retry_at = time.time() + backoff
        self.failures[failure.topic] = failure
        self._changed()
        return failure

    def recovered(self, topic: str) -> TopicFailure | None:
        """``topic`` copied again past where it failed: it is running again."""
        failure = self.failures.pop(topic, None)
        if failure is not None:
            self._changed()
        return failure

    def set_rate(self, rate: float | None, configured: float) -> float:
        """Set (or, with ``None``, go back to ``configured``) the rate limit; the rate now."""
        self.rate_override = rate
        self.throttle.set_rate(configured if rate is None else rate)
        self._changed()
        return self.throttle.rate

    def retry_due(self, now: float) -> list[str]:
        """Failed topics whose retry time came (their partitions are resumed to try again)."""
        return [t for t, f in self.failures.items() if f.retry_at <= now]

    def blocks(self, tp: TopicPartition, now: float) -> bool:
        """Whether ``tp`` must fetch nothing now: paused, or of a failed topic not yet due."""
        failure = self.failures.get(tp.topic)
        if failure is not None and failure.retry_at > now:
            return True
        return any(p.scope.covers(tp) for p in self.pauses.values())

    def topic_state(self, topic: str) -> TopicState:
        if topic in self.failures:
            return "failed"
        if any(p.scope.covers(TopicPartition(topic, -1)) for p in self.pauses.values()):
            return "paused"  # the flow or the whole topic
        return "running"

    def summary(self) -> dict[str, Any]:
        """What `/healthz` adds to the flow's entry: its pauses and failed topics (only when
        there are some), and its rate limit when it has one."""
        out: dict[str, Any] = {}
        if self.pauses:
            out["paused"] = sorted(self.pauses)
        if self.failures:
            out["failed_topics"] = {t: f.show() for t, f in sorted(self.failures.items())}
        if self.throttle.rate:
            out["rate_limit_bytes_per_s"] = self.throttle.rate
        return out

    def show(self, topics: Iterable[str] = ()) -> dict[str, Any]:
        """The flow's control state for the admin API and `/healthz`."""
        names = sorted(
            {
                *topics,
                *self.failures,
                *(p.scope.topic for p in self.pauses.values() if p.scope.topic),
            }
        )
        return {
            "paused": [p.show() for p in sorted(self.pauses.values(), key=lambda p: p.scope.key)],
            "topics": {
                t: {
                    "state": self.topic_state(t),
                    **({"failure": self.failures[t].show()} if t in self.failures else {}),
                }
                for t in names
            },
            "rate_limit_bytes_per_s": self.throttle.rate or None,
        }


class Applied:
    """What a run of the flow last applied to its consumer, so it re-applies only on change."""

    def __init__(self) -> None:
        self.version = -1
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.next_retry = float("inf")

    def apply(self, control: FlowControl, consumer: Any) -> bool:
        """Pause in ``consumer`` the assigned partitions ``control`` blocks; resume the others
        it paused before (a rebalance forgets pauses: the new assignment gets them again).
        Whether anything was looked at again (the state or the assignment moved)."""
        now = time.time()
        assigned = frozenset(consumer.assignment())
        if (
            control.version == self.version
            and assigned == self.assignment
            and now < self.next_retry
        ):
            return False
        want = {tp for tp in assigned if control.blocks(tp, now)}
        paused = set(consumer.paused())
        if want - paused:
            consumer.pause(*sorted(want - paused))
        if paused - want:
            consumer.resume(*sorted(paused - want))
        self.version, self.assignment = control.version, assigned
        due = [f.retry_at for f in control.failures.values() if f.retry_at > now]
        self.next_retry = min(due, default=float("inf"))
        return True

    def hold_back(self, control: FlowControl, consumer: Any, batch: dict[Any, Any]) -> None:
        """Take out of a fetched ``batch`` the partitions ``control`` blocks, each moved back
        to its first record (fetched again on resume): a partition paused while its fetch was
        on its way, or before the consumer's first assignment (exactly-once flows have no
        rebalance listener to pause it in), copies nothing either."""
        if not batch or consumer is None or not (control.pauses or control.failures):
            return
        now = time.time()
        for tp in [tp for tp in batch if control.blocks(tp, now)]:
            consumer.seek(tp, batch.pop(tp)[0].offset)
        self.apply(control, consumer)
