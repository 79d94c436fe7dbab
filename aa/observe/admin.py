"""The admin API of `aa run`, on its HTTP port beside ``/metrics`` and ``/healthz``.

``GET /api/v1/state`` reads; ``POST /api/v1/pause``, ``/resume``, ``/rate`` and ``/reload``
write. Writing calls are refused unless the operator gave the process a token (the
environment variable :data:`TOKEN_ENV`), and then need ``Authorization: Bearer <token>``. The
token is held as a :class:`~aa.config.secret.Secret` and never printed; it is compared in
constant time. The port stays on 127.0.0.1 unless ``metrics.host`` says otherwise.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web
from aiokafka.errors import KafkaError

from aa.config.kinds import parse_rate
from aa.config.secret import Secret
from aa.errors import AaError
from aa.logs import get_logger
from aa.protocols import ProcessControl

TOKEN_ENV = "AA_ADMIN_TOKEN"  # noqa: S105 - the name of the variable, not a token
"""The environment variable that holds the token of the admin API's writing calls."""
PREFIX = "/api/v1"

log = get_logger("aa.admin_api")

Handler = Callable[[web.Request], Awaitable[web.Response]]


def token_from(env: Mapping[str, str] | None = None) -> Secret | None:
    """The admin token the environment gives (``None``: writing calls are refused)."""
    value = (os.environ if env is None else env).get(TOKEN_ENV, "")
    return Secret(value, where=f"${TOKEN_ENV}") if value.strip() else None


def _answer(doc: Mapping[str, Any], status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(doc), status=status, content_type="application/json")


def _refused(status: int, error: str) -> web.Response:
    return _answer({"ok": False, "error": error}, status)


class AdminApi:
    """Adds the admin routes to the HTTP server's application (``MetricsServer(routes=)``)."""

    def __init__(
        self, process: ProcessControl, token: Secret | None, *, mutual_tls: bool = False
    ) -> None:
        self._process = process
        self._token = token
        self._mutual_tls = mutual_tls
        """Every client presented a certificate the port's client CAs signed: it may write."""

    def __call__(self, app: web.Application) -> None:
        app.router.add_get(f"{PREFIX}/state", self._state)
        for name, handler in (
            ("pause", self._pause),
            ("resume", self._resume),
            ("rate", self._rate),
            ("reload", self._reload),
        ):
            app.router.add_post(f"{PREFIX}/{name}", self._writing(name, handler))

    async def _state(self, _request: web.Request) -> web.Response:
        return _answer(self._process.state())

    def _allowed(self, request: web.Request) -> web.Response | None:
        """``None`` when the request may write; else the refusal."""
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        if self._mutual_tls and peer:
            return None
        if self._token is None:
            return _refused(
                403,
                f"writing calls are disabled: start `aa run` with {TOKEN_ENV} set to a token, "
                "and send it as `Authorization: Bearer <token>`, or set metrics.tls_certfile and "
                "metrics.tls_client_cafile for mutual TLS (docs/operations.md, admin API)",
            )
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        want = self._token.reveal().encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), want):
            return _refused(401, f"a writing call needs `Authorization: Bearer <{TOKEN_ENV}>`")
        return None

    def _writing(self, name: str, handler: Handler) -> Handler:
        async def call(request: web.Request) -> web.Response:
            refused = self._allowed(request)
            if refused is not None:
                log.warning("admin_call_refused", call=name, status=refused.status)
                return refused
            try:
                return await handler(request)
            except AaError as exc:
                return _refused(400, str(exc))
            except (KafkaError, OSError, TimeoutError) as exc:
                return _refused(503, f"{name} could not be stored: {exc!r}; try again")

        return call

    async def _body(self, request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        try:
            body = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise AaError(f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise AaError("the body must be a JSON object")
        return body

    async def _scope(self, request: web.Request) -> tuple[str, str | None, int | None, str]:
        body = await self._body(request)
        flow, topic, partition = body.get("flow"), body.get("topic"), body.get("partition")
        if not isinstance(flow, str) or not flow:
            raise AaError('name the flow: {"flow": "SF->NYC"}')
        if topic is not None and not isinstance(topic, str):
            raise AaError("topic: a topic name")
        if partition is not None and (
            isinstance(partition, bool) or not isinstance(partition, int)
        ):
            raise AaError("partition: a partition number")
        note = body.get("note", "")
        return flow, topic, partition, str(note)[:200]

    async def _pause(self, request: web.Request) -> web.Response:
        flow, topic, partition, note = await self._scope(request)
        return _answer(await self._process.pause(flow, topic, partition, note))

    async def _resume(self, request: web.Request) -> web.Response:
        flow, topic, partition, _ = await self._scope(request)
        return _answer(await self._process.resume(flow, topic, partition))

    async def _rate(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        flow, raw = body.get("flow"), body.get("bytes_per_s")
        if not isinstance(flow, str) or not flow:
            raise AaError('name the flow: {"flow": "SF->NYC", "bytes_per_s": "10MB"}')
        rate = None if raw is None else parse_rate(str(raw))
        if raw is not None and (rate is None or isinstance(raw, bool)):
            raise AaError(f"bytes_per_s: {raw!r} is not a rate; e.g. 10MB, 512KiB, 0 (no limit)")
        return _answer(await self._process.set_rate(flow, rate))

    async def _reload(self, _request: web.Request) -> web.Response:
        return _answer(await self._process.reload())
