"""One connection to one broker, outside any client: what ``aa`` uses to check a DC's TLS and
SASL settings and read its cluster id before the clients start (:func:`aa.config.client.
preflight`). aiokafka has these parts but not as public API."""

from __future__ import annotations

from typing import Any

from aiokafka.conn import create_conn
from aiokafka.protocol.metadata import MetadataRequest


async def connect(host: str, port: int, **options: Any) -> Any:
    """An open connection to ``host:port`` (TLS and SASL done), with aiokafka's connection
    options (``ssl_context``, ``security_protocol``, ``sasl_*``, ``request_timeout_ms``)."""
    return await create_conn(host, port, **options)


def metadata_request() -> Any:
    """A request for the cluster's metadata without topics (its brokers and cluster id)."""
    return MetadataRequest([])
