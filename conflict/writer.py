"""EventWriter: how an application writes an event to its own DC, correctly, in three lines::

async with EventWriter("SF", "users", bootstrap_servers="127.0.0.1:19092") as w:
    await w.write("alice", "set", {"book": "A"})
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaProducer

from conflict.envelope import Event
from conflict.hlc import HLC, Clock
from conflict.ids import new_id


class EventWriter:
    """Assigns id, HLC and origin, and produces to the local DC (idempotent, ``acks=all``).

    Give it the last HLC it wrote before a restart (``last_hlc=``) to stay monotonic, and
    :meth:`observe` the HLCs of events the application read before writing (or share
    :attr:`clock` with a :class:`~conflict.Materializer`), so that a write made after reading
    a state is ordered after it even when this DC's wall clock is behind.
    """

    def __init__(
        self,
        dc: str,
        topic: str,
        *,
        clock: Clock | None = None,
        last_hlc: HLC | None = None,
        **client_kwargs: Any,
    ) -> None:
        self.clock = clock or Clock(dc, last=last_hlc)
        self.dc = self.clock.dc
        if self.dc != dc:
            raise ValueError(f"clock is {self.clock.dc}'s, the writer is {dc}'s")
        self.topic = topic
        self._client_kwargs = {"acks": "all", "enable_idempotence": True, **client_kwargs}
        self._producer: AIOKafkaProducer | None = None
        self._pending: set[asyncio.Future[Any]] = set()

    async def start(self) -> None:
        if self._producer is None:
            producer = AIOKafkaProducer(**self._client_kwargs)
            await producer.start()
            self._producer = producer

    async def stop(self) -> None:
        """Flush (raising a failed write's error) and close. Idempotent."""
        if self._producer is not None:
            try:
                await self.flush()
            finally:
                producer, self._producer = self._producer, None
                await producer.stop()

    async def __aenter__(self) -> EventWriter:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def observe(self, hlc: HLC) -> HLC:
        """Merge an HLC the application has seen (refused when too far in the future)."""
        return self.clock.observe(hlc)

    def event(
        self, key: str, type_: str, payload: Any = None, supersedes: tuple[str, ...] = ()
    ) -> Event:
        """A new event of this DC, with a fresh id and HLC (not written)."""
        hlc = self.clock.tick()
        return Event(new_id(hlc.physical), key, type_, self.dc, hlc, payload, tuple(supersedes))

    async def write(
        self,
        key: str,
        type_: str,
        payload: Any = None,
        *,
        supersedes: tuple[str, ...] = (),
        wait: bool = True,
    ) -> Event:
        """Produce one event; with ``wait`` (default) return once the broker acknowledged it.

        With ``wait=False`` the write is acknowledged later; :meth:`flush` (or leaving the
        ``async with`` block) waits for it and raises if it failed, so no failure goes unseen.
        """
        if self._producer is None:
            raise RuntimeError("EventWriter is not started: use 'async with' or start()")
        event = self.event(key, type_, payload, supersedes)
        k, v, headers = event.encode()
        fut = await self._producer.send(self.topic, v, key=k, headers=headers)
        if wait:
            await fut
        else:
            self._pending.add(fut)
            fut.add_done_callback(self._settled)
        return event

    def _settled(self, fut: asyncio.Future[Any]) -> None:
        if fut.cancelled() or fut.exception() is None:
            self._pending.discard(fut)  # failed ones stay until flush() raises them

    async def flush(self) -> None:
        """Wait until every write was acknowledged; raise the first failure."""
        if self._producer is not None:
            await self._producer.flush()
        pending, self._pending = list(self._pending), set()
        if pending:
            await asyncio.gather(*pending)
