"""Hostile clients of the HTTP port of `aa run` (issue 29 item 9): a header line over 64 KiB,
endless header lines, a client that trickles bytes, more connections than the bound. Each
costs that client a closed connection, nothing else: no error escapes into the event loop, and
the next scrape of /metrics is served."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from aa.observe.http import HttpBounds, MetricsServer
from aa.observe.metrics import Metrics
from tests.helpers.http import http_get

pytestmark = pytest.mark.unit

DEADLINE_S = 60.0
"""How long a test waits for the server to close a connection (a polling deadline)."""


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """What reaches the event loop's exception handler while the test runs."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    old = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    yield seen
    loop.set_exception_handler(old)


async def _served(server: MetricsServer) -> None:
    status, body = await http_get(server.port, "/metrics")
    assert status == 200
    assert b"aa_flow_up" in body or b"# HELP" in body


async def _closed_while(
    writer: asyncio.StreamWriter, reader: asyncio.StreamReader, chunk: Callable[[int], bytes]
) -> int:
    """Write ``chunk(i)`` for i = 0, 1, ... until the server closes the connection (the read
    ends or a write fails); how many chunks were written. Fails past :data:`DEADLINE_S`."""
    closed = asyncio.ensure_future(reader.read())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    i = 0
    try:
        while not closed.done():
            if loop.time() > deadline:
                raise AssertionError(f"the server kept the connection open for {i} chunks")
            try:
                writer.write(chunk(i))
                await writer.drain()
            except ConnectionError:
                break
            i += 1
            await asyncio.wait([closed], timeout=0.01)  # pacing: the client keeps writing
        return i
    finally:
        closed.cancel()
        writer.close()


async def test_a_header_line_over_64_kib_costs_a_closed_connection(
    loop_errors: list[dict[str, Any]],
) -> None:
    async with MetricsServer(Metrics(), lambda: (True, {}), port=0) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), DEADLINE_S)
        writer.close()
        assert not answer.startswith(b"HTTP/1.1 200")  # refused, not served
        await _served(server)
    assert loop_errors == []


async def test_endless_header_lines_cost_a_closed_connection(
    loop_errors: list[dict[str, Any]],
) -> None:
    async with MetricsServer(Metrics(), lambda: (True, {}), port=0) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /metrics HTTP/1.1\r\n")
        sent = await _closed_while(writer, reader, lambda i: b"X-%d: y\r\n" % i * 20)
        assert sent < 1_000  # closed after a bounded head, not when the client tired
        await _served(server)
    assert loop_errors == []


async def test_a_client_trickling_its_request_costs_a_closed_connection(
    loop_errors: list[dict[str, Any]],
) -> None:
    bounds = HttpBounds(connection_deadline_s=1.0)
    async with MetricsServer(Metrics(), lambda: (True, {}), port=0, bounds=bounds) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /metrics HTTP/1.1\r\nX-a: b")
        # one byte per 10 ms: each read sees data, so only a bound on the whole request ends it
        await _closed_while(writer, reader, lambda i: b"\r\nX-a: b" if i % 40 == 39 else b"X")
        await _served(server)
    assert loop_errors == []


async def test_connections_over_the_bound_are_closed_at_once(
    loop_errors: list[dict[str, Any]],
) -> None:
    bounds = HttpBounds(max_connections=4, connection_deadline_s=DEADLINE_S * 2)
    async with MetricsServer(Metrics(), lambda: (True, {}), port=0, bounds=bounds) as server:
        held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(4)]
        # the fifth is closed while the four it found are still open
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), DEADLINE_S) == b""
        writer.close()
        assert not any(r.at_eof() for r, _ in held)
        for _, w in held:
            w.close()
            await w.wait_closed()
        await _until_served(server)
    assert loop_errors == []


async def _until_served(server: MetricsServer) -> None:
    """/metrics answers once the held connections are gone (their close reaches the server
    a moment after the client's)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        try:
            await _served(server)
            return
        except (ConnectionError, IndexError, ValueError):
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.01)
