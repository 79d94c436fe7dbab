"""A loopback TCP proxy for fault drills: forward, cut (a network partition), heal, throttle.

It runs its own event loop in a daemon thread, so it outlives any one test's loop and can sit
between a broker and `aa run` processes. A broker put behind it must advertise the proxy's
port (a second listener whose advertised address is the proxy), or clients would reconnect to
the broker directly after bootstrap.

``cut()`` drops every open connection and black-holes new ones (accepted, never answered), as a
partition between DCs does; ``heal()`` forwards again. ``throttle(bytes_per_s)`` paces data in
both directions (a slow WAN link or a slow target); ``throttle(None)`` lifts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from types import TracebackType


class TcpProxy:
    def __init__(self, upstream_port: int, *, listen_port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.port = listen_port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._cut = False
        self._rate: float | None = None
        self.bytes_forwarded = 0

    @property
    def open_connections(self) -> int:
        """Client connections open now (forwarded or black-holed)."""
        return len(self._writers)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- control, from any thread ----------------------------------------------------------------

    def start(self) -> TcpProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def cut(self) -> None:
        """Partition: close every connection; new ones hang without an answer."""
        asyncio.run_coroutine_threadsafe(self._set_cut(True), self._loop).result(30)

    def heal(self) -> None:
        asyncio.run_coroutine_threadsafe(self._set_cut(False), self._loop).result(30)

    def throttle(self, bytes_per_s: float | None) -> None:
        self._rate = bytes_per_s

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- inside the proxy's loop ------------------------------------------------------------------

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _set_cut(self, cut: bool) -> None:
        self._cut = cut
        if cut:
            for w in list(self._writers):
                w.close()
            self._writers.clear()

    async def _close(self) -> None:
        await self._set_cut(True)
        if self._server is not None:
            self._server.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            await self._black_hole(reader, writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.close()

    async def _black_hole(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read and drop until healed or the client gives up; never answer."""
        self._writers.add(writer)
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while self._cut and await reader.read(65536):
                pass
        self._writers.discard(writer)
        writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while not self._cut:
                chunk = await reader.read(16384)
                if not chunk:
                    break
                if self._rate:
                    began = time.monotonic()
                    writer.write(chunk)
                    await writer.drain()
                    # pace: this chunk may take len/rate seconds at most this fast
                    await asyncio.sleep(
                        max(0.0, len(chunk) / self._rate - (time.monotonic() - began))
                    )
                else:
                    writer.write(chunk)
                    await writer.drain()
                self.bytes_forwarded += len(chunk)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError):
                writer.close()
