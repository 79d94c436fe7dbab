"""The checkpoint value and the monotonic rule.

A checkpoint says: group G at ``upstream`` of ``topic/partition`` in DC ``source`` may resume
at ``downstream`` of ``target_topic/partition`` in the DC holding the checkpoint. Checkpoints
never go backwards (per group and partition), across mirror restarts too: the task reads the
newest ones back before emitting (:class:`Checkpoints`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from aa import wire
from aa.errors import AaError


class CheckpointDecodeError(AaError):
    """A record of a checkpoint topic cannot be read."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    group: str
    topic: str
    partition: int
    upstream: int
    target_topic: str
    downstream: int
    exactness: str
    ts_ms: int

    @property
    def ident(self) -> tuple[str, str, int]:
        return (self.group, self.topic, self.partition)

    def key(self) -> bytes:
        return orjson.dumps([self.group, self.topic, self.partition])

    def encode(self) -> bytes:
        return _WIRE.dump(self)

    @staticmethod
    def decode(value: bytes) -> Checkpoint:
        try:
            return _WIRE.load(orjson.loads(value))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise CheckpointDecodeError(f"not a checkpoint: {value[:80]!r} ({exc})") from exc


_WIRE = wire.Form(Checkpoint, ts_ms="ts")


class Checkpoints:
    """The newest checkpoint per (group, topic, partition); refuses to go backwards."""

    def __init__(self) -> None:
        self.latest: dict[tuple[str, str, int], Checkpoint] = {}

    def remember(self, cps: Iterable[Checkpoint]) -> None:
        """Load checkpoints read back from the topic (newest last)."""
        for cp in cps:
            old = self.latest.get(cp.ident)
            if old is None or cp.downstream >= old.downstream:
                self.latest[cp.ident] = cp

    def would_advance(self, cp: Checkpoint) -> bool:
        """True when ``cp`` is new or further than the last one (without remembering it)."""
        old = self.latest.get(cp.ident)
        return old is None or not (
            cp.downstream < old.downstream
            or (cp.downstream == old.downstream and cp.upstream <= old.upstream)
        )

    def advance(self, cp: Checkpoint) -> Checkpoint | None:
        """``cp`` if it should be emitted (new, or further than the last), else ``None``."""
        old = self.latest.get(cp.ident)
        if old is not None and (
            cp.downstream < old.downstream
            or (cp.downstream == old.downstream and cp.upstream <= old.upstream)
        ):
            return None
        self.latest[cp.ident] = cp
        return cp

    def for_group(self, group: str) -> list[Checkpoint]:
        return sorted(
            (cp for (g, _, _), cp in self.latest.items() if g == group),
            key=lambda c: (c.target_topic, c.partition),
        )
