"""A tiny asyncio HTTP endpoint: ``/metrics`` (Prometheus text) and ``/healthz`` (JSON).

Bound to 127.0.0.1 by default: metrics can reveal topic names, so exposing them is a choice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import orjson

from aa.config.model import MetricsEndpoint
from aa.lifecycle import AsyncResource
from aa.observe.metrics import Metrics

Health = Callable[[], tuple[bool, dict[str, Any]]]
_DEFAULT = MetricsEndpoint()  # the config's defaults (metrics.host, metrics.port)


class MetricsServer(AsyncResource):
    def __init__(
        self, metrics: Metrics, health: Health, host: str = _DEFAULT.host, port: int = _DEFAULT.port
    ) -> None:
        self._metrics = metrics
        self._health = health
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        sock = self._server.sockets[0]
        self.port = int(sock.getsockname()[1])

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.decode("latin-1").split()
            path = parts[1] if len(parts) > 1 else "/"
            if path.startswith("/metrics"):
                status, ctype, body = 200, "text/plain; version=0.0.4", self._metrics.render()
            elif path.startswith("/healthz"):
                ok, detail = self._health()
                status, ctype = (200 if ok else 503), "application/json"
                body = orjson.dumps({"ok": ok, **detail})
            else:
                status, ctype, body = 404, "text/plain", b"not found\n"
            reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
            writer.write(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass  # a client that hangs or disconnects gets nothing; the server keeps serving
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
