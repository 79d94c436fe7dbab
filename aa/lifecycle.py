"""One async lifecycle for aa's long-lived clients and servers: idempotent ``start``/``close``,
``async with``, and a ``ResourceWarning`` when one is garbage-collected while still open (a
leaked connection or socket says where it was made, like aiokafka's producer)."""

from __future__ import annotations

import warnings
from types import TracebackType
from typing import Self


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
            await self._open()
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
