"""A minimal HTTP GET for the metrics endpoint (no client library needed)."""

from __future__ import annotations

import asyncio


async def http_get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    """``(status, body)`` of ``GET path``."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body
