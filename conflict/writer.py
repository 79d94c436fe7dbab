"""EventWriter: how an application writes an event to its own DC, correctly, in three lines::

async with EventWriter("SF", "users", bootstrap_servers="127.0.0.1:19092") as w:
    await w.write("alice", "set", {"book": "A"})
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaProducer

from conflict.envelope import Event
from conflict.hlc import HLC, Clock
from conflict.ids import new_id


class EventWriter:
    """Assigns id, HLC and origin, and produces to the local DC (idempotent, acks=all)."""

    def __init__(
        self,
        dc: str,
        topic: str,
        *,
        clock: Clock | None = None,
        last_hlc: HLC | None = None,
        **client_kwargs: Any,
    ) -> None:
        self.dc = dc
        self.topic = topic
        self.clock = clock or Clock(dc, last=last_hlc)
        self._producer = AIOKafkaProducer(acks="all", enable_idempotence=True, **client_kwargs)
        self._started = False

    async def start(self) -> None:
        if not self._started:
            await self._producer.start()
            self._started = True

    async def stop(self) -> None:
        if self._started:
            self._started = False
            await self._producer.stop()

    async def __aenter__(self) -> EventWriter:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def event(
        self, key: str, type_: str, payload: Any = None, supersedes: tuple[str, ...] = ()
    ) -> Event:
        hlc = self.clock.tick()
        return Event(new_id(hlc.physical), key, type_, self.dc, hlc, payload, supersedes)

    async def write(
        self,
        key: str,
        type_: str,
        payload: Any = None,
        *,
        supersedes: tuple[str, ...] = (),
        wait: bool = True,
    ) -> Event:
        """Produce one event; with ``wait`` (default) return once the broker acknowledged it."""
        event = self.event(key, type_, payload, supersedes)
        k, v, headers = event.encode()
        fut = await self._producer.send(self.topic, v, key=k, headers=headers)
        if wait:
            await fut
        return event

    async def flush(self) -> None:
        await self._producer.flush()
