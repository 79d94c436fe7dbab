"""The /metrics and /healthz endpoint."""

from __future__ import annotations

import orjson
import pytest

from aa.observe.http import MetricsServer
from aa.observe.metrics import Metrics
from tests.helpers.http import http_get

pytestmark = pytest.mark.unit


async def test_metrics_and_health() -> None:
    metrics = Metrics()
    metrics.records.labels(source="SF", target="NYC", topic="users").inc(3)
    healthy = {"ok": True}
    server = MetricsServer(metrics, lambda: (healthy["ok"], {"flows": {}}), port=0)
    await server.start()
    try:
        status, body = await http_get(server.port, "/metrics")
        assert status == 200
        assert b'aa_records_replicated_total{source="SF",target="NYC",topic="users"} 3.0' in body
        status, body = await http_get(server.port, "/healthz")
        assert (status, orjson.loads(body)["ok"]) == (200, True)
        healthy["ok"] = False
        status, _ = await http_get(server.port, "/healthz")
        assert status == 503
        status, _ = await http_get(server.port, "/nope")
        assert status == 404
    finally:
        await server.close()
