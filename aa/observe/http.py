"""The HTTP port of `aa run`: ``/metrics`` (Prometheus text), ``/healthz`` (JSON) and the admin
API (:mod:`aa.observe.admin`), served by aiohttp's server.

Bound to 127.0.0.1 by default: metrics can reveal topic names, so exposing them is a choice.
A client costs the process a bounded amount, whatever it sends (issue 29 item 9): at most
:attr:`HttpBounds.max_connections` connections at once (one more is closed as soon as it is
accepted), one request per connection, each connection closed
:attr:`HttpBounds.connection_deadline_s` after it was accepted whatever it is doing (a client
trickling its request a byte at a time), header lines, header count and bodies bounded by
aiohttp's parser (a line over the bound is answered 400 and the connection closed).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from aa.config.model import MetricsEndpoint
from aa.lifecycle import AsyncResource
from aa.observe.metrics import Metrics

Health = Callable[[], tuple[bool, dict[str, Any]]]
Routes = Callable[[web.Application], None]
"""Adds more routes to the application (the admin API)."""
_DEFAULT = MetricsEndpoint()  # the config's defaults (metrics.host, metrics.port)


@dataclass(frozen=True, slots=True)
class HttpBounds:
    """What one client may cost the process."""

    max_connections: int = 32
    """Connections open at once; one more is closed when accepted."""
    connection_deadline_s: float = 10.0
    """A connection is closed this long after it was accepted, whatever it is doing."""
    max_line_bytes: int = 8190
    """A request line or header line (aiohttp's default)."""
    max_headers: int = 64
    """Header lines of one request."""
    max_body_bytes: int = 64 * 1024
    """A request body (the admin API's JSON)."""


class _Bounded(asyncio.Protocol):
    """One accepted connection: counted against the bound, closed at its deadline; everything
    else is aiohttp's request handler's."""

    def __init__(self, server: MetricsServer) -> None:
        self._server = server
        self._inner: asyncio.Protocol | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        s = self._server
        factory = s.runner.server if s.runner is not None else None
        if s.open_connections >= s.bounds.max_connections or factory is None:
            transport.abort()
            return
        s.open_connections += 1
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(s.bounds.connection_deadline_s, transport.abort)
        self._inner = factory()
        self._inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._inner is None:
            return
        self._server.open_connections -= 1
        if self._deadline is not None:
            self._deadline.cancel()
        inner, self._inner = self._inner, None
        inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()


@web.middleware
async def _one_request_per_connection(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    response = await handler(request)
    response.force_close()  # the connection's deadline is the request's
    return response


class MetricsServer(AsyncResource):
    def __init__(
        self,
        metrics: Metrics,
        health: Health,
        host: str = _DEFAULT.host,
        port: int = _DEFAULT.port,
        *,
        bounds: HttpBounds | None = None,
        routes: Routes | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._metrics = metrics
        self._health = health
        self.host = host
        self.port = port
        self.bounds = bounds or HttpBounds()
        self._routes = routes
        self._ssl = ssl_context
        self.runner: web.AppRunner | None = None
        self.open_connections = 0
        self._server: asyncio.Server | None = None

    def _app(self) -> web.Application:
        app = web.Application(
            client_max_size=self.bounds.max_body_bytes, middlewares=[_one_request_per_connection]
        )
        app.router.add_get("/metrics", self._metrics_page)
        app.router.add_get("/healthz", self._healthz)
        if self._routes is not None:
            self._routes(app)
        return app

    async def _metrics_page(self, _request: web.Request) -> web.Response:
        return web.Response(
            body=self._metrics.render(), headers={"Content-Type": "text/plain; version=0.0.4"}
        )

    async def _healthz(self, _request: web.Request) -> web.Response:
        ok, detail = self._health()
        return web.Response(
            body=orjson.dumps({"ok": ok, **detail}),
            status=200 if ok else 503,
            content_type="application/json",
        )

    async def _open(self) -> None:
        b = self.bounds
        self.runner = web.AppRunner(
            self._app(),
            access_log=None,
            handle_signals=False,
            max_line_size=b.max_line_bytes,
            max_field_size=b.max_line_bytes,
            max_headers=b.max_headers,
        )
        await self.runner.setup()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Bounded(self),
            self.host,
            self.port,
            ssl=self._ssl,
            ssl_handshake_timeout=self.bounds.connection_deadline_s if self._ssl else None,
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
