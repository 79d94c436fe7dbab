"""The /metrics and /healthz endpoint."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from aa.observe.http import MetricsServer
from aa.observe.metrics import Metrics

pytestmark = pytest.mark.unit


async def _get(port: int, path: str) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


async def test_metrics_and_health() -> None:
    metrics = Metrics()
    metrics.records.labels(source="SF", target="NYC", topic="users").inc(3)
    healthy = {"ok": True}
    server = MetricsServer(metrics, lambda: (healthy["ok"], {"flows": {}}), port=0)
    await server.start()
    try:
        status, body = await _get(server.port, "/metrics")
        assert status == 200
        assert b'aa_records_replicated_total{source="SF",target="NYC",topic="users"} 3.0' in body
        status, body = await _get(server.port, "/healthz")
        assert (status, orjson.loads(body)["ok"]) == (200, True)
        healthy["ok"] = False
        status, _ = await _get(server.port, "/healthz")
        assert status == 503
        status, _ = await _get(server.port, "/nope")
        assert status == 404
    finally:
        await server.close()
