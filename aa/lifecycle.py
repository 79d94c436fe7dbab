"""One async lifecycle for aa's long-lived clients and servers: idempotent ``start``/``close``,
``async with``, and a ``ResourceWarning`` when one is garbage-collected while still open (a
leaked connection or socket says where it was made, like aiokafka's producer).

A start that fails half-way (a DC down) is closed again before the error propagates: aiokafka
leaves a consumer or producer whose bootstrap failed open, and a loop that retries every few
seconds would leak one per try. :func:`started` does the same for a bare aiokafka client."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import warnings
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

C = TypeVar("C")


async def started(client: C) -> C:
    """``client`` (an aiokafka consumer, producer or admin client) started; stopped again, and
    the error raised, when its start fails."""
    c: Any = client
    try:
        await c.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await (c.stop() if hasattr(c, "stop") else c.close())
        raise
    return client


@contextlib.contextmanager
def loop_signals(
    loop: asyncio.AbstractEventLoop, handlers: Mapping[signal.Signals, Callable[[], object]]
) -> Iterator[None]:
    """``handlers`` on ``loop`` for the duration, then the process's own handlers back:
    ``remove_signal_handler`` alone puts back the default, and the default for SIGTERM kills the
    process (aa turns SIGTERM into a clean stop from its first line: :mod:`aa.cli.stopping`)."""
    before = {sig: signal.getsignal(sig) for sig in handlers}
    for sig, handler in handlers.items():
        loop.add_signal_handler(sig, handler)
    try:
        yield
    finally:
        for sig, previous in before.items():
            loop.remove_signal_handler(sig)
            if previous is not None:
                signal.signal(sig, previous)


class AsyncResource:
    """Subclasses implement :meth:`_open` and :meth:`_close`; callers use :meth:`start` and
    :meth:`close` (each a no-op when already done) or ``async with``."""

    _is_open = False  # a class default: ``__del__`` works even if ``__init__`` failed

    async def _open(self) -> None:
        """Acquire the resource (called once per start)."""

    async def _close(self) -> None:
        """Release the resource (called once per close of an open resource)."""

    @property
    def is_open(self) -> bool:
        return self._is_open

    async def start(self) -> Self:
        if not self._is_open:
            try:
                await self._open()
            except BaseException:
                with contextlib.suppress(Exception):  # release what the open got to
                    await self._close()
                raise
            self._is_open = True
        return self

    async def close(self) -> None:
        if self._is_open:
            self._is_open = False
            await self._close()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __del__(self) -> None:
        if self._is_open:
            warnings.warn(f"unclosed {self!r}", ResourceWarning, stacklevel=1, source=self)
