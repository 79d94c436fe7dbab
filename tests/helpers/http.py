"""A minimal HTTP client for the metrics endpoint (no client library needed)."""

from __future__ import annotations

import asyncio


async def http_get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    """``(status, body)`` of ``GET path``."""
    return await http_request(port, "GET", path, host=host)


async def http_request(
    port: int,
    method: str,
    path: str,
    body: bytes = b"",
    *,
    headers: dict[str, str] | None = None,
    host: str = "127.0.0.1",
) -> tuple[int, bytes]:
    """``(status, body)`` of one request, on its own connection."""
    reader, writer = await asyncio.open_connection(host, port)
    head = {"Host": host, "Connection": "close", "Content-Length": str(len(body))}
    head.update(headers or {})
    lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    writer.write(f"{method} {path} HTTP/1.1\r\n{lines}\r\n".encode() + body)
    await writer.drain()
    raw = await reader.read()
    writer.close()
    answer, _, payload = raw.partition(b"\r\n\r\n")
    return int(answer.split()[1]), payload
