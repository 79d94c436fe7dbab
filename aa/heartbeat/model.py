"""The heartbeat value and the pure view over the heartbeats a DC has received."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from aa import wire
from aa.provenance import MIRRORED_AT


@dataclass(frozen=True, slots=True)
class Heartbeat:
    dc: str
    ts_ms: int

    def encode(self) -> bytes:
        return _WIRE.dump(self)

    @staticmethod
    def decode(value: bytes | None) -> Heartbeat | None:
        """``None`` for anything that is not a heartbeat (the topic is shared with nobody, but
        a stray record must not stop the monitor)."""
        try:
            return _WIRE.load(orjson.loads(value or b""))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


_WIRE = wire.Form(Heartbeat, ts_ms="ts")


@dataclass(frozen=True, slots=True)
class RemoteView:
    """What ``local`` knows of ``remote``: its newest heartbeat and when that was copied in."""

    local: str
    remote: str
    newest_ms: int
    arrived_ms: int

    def age_s(self, now_ms: int) -> float:
        return max(0.0, (now_ms - self.newest_ms) / 1000)

    @property
    def latency_s(self) -> float:
        return max(0.0, (self.arrived_ms - self.newest_ms) / 1000)


class HeartbeatView:
    """Folds the heartbeat records read in one DC into the newest per remote DC."""

    def __init__(self, local: str) -> None:
        self.local = local
        self.remotes: dict[str, RemoteView] = {}

    def add(self, value: bytes | None, headers: Sequence[tuple[str, bytes]], read_ms: int) -> None:
        hb = Heartbeat.decode(value)
        if hb is None or hb.dc == self.local:
            return
        arrived = read_ms
        for k, v in headers:
            if k == MIRRORED_AT:
                with contextlib.suppress(ValueError):  # a bad stamp: use the read time
                    arrived = int(v)
        old = self.remotes.get(hb.dc)
        if old is None or hb.ts_ms > old.newest_ms:
            self.remotes[hb.dc] = RemoteView(self.local, hb.dc, hb.ts_ms, arrived)
