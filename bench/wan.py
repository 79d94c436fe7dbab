"""A delaying TCP proxy: a wide-area link between two DCs on one machine.

``python -m bench.wan --delay-ms 25 --route 9101=127.0.0.1:9001 [--route ...] --ready FILE``
listens on each ``9101`` and relays every connection to its target, holding each chunk of bytes
for ``delay-ms`` in each direction (so a round trip gains twice that). It adds latency only: the
bandwidth is the machine's, and each direction buffers at most ``--buffer-mb`` before it stops
reading (TCP back-pressure, like a full window). One route per broker; the broker must
advertise the proxy's address to the clients that should take the long way (W4 gives the
source broker a second listener, ``WAN``, advertised at the proxy's port).

Netem (``tc qdisc ... netem delay``) would do the same in the kernel, but it needs root and a
network namespace per DC; this proxy needs neither.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class Route:
    """Connections to ``listen_port`` (on ``listen_host``) are relayed to ``target``."""

    listen_host: str
    listen_port: int
    target_host: str
    target_port: int


def parse_route(raw: str, *, listen_host: str = "127.0.0.1") -> Route:
    """``9101=127.0.0.1:9001`` -> Route; a clear error naming the flag otherwise."""
    listen, sep, target = raw.partition("=")
    host, colon, port = target.rpartition(":")
    if not sep or not colon or not host or not listen.isdigit() or not port.isdigit():
        raise ValueError(f"--route {raw!r}: expected LISTEN_PORT=TARGET_HOST:TARGET_PORT")
    return Route(listen_host, int(listen), host, int(port))


@dataclass(slots=True)
class DelayLine:
    """The pure part of one direction: chunks in arrival order, each released ``delay_s``
    after it arrived and never before the chunk ahead of it (a link does not reorder), with
    the bytes held bounded by ``capacity`` (the writer side waits while it is full)."""

    delay_s: float
    capacity: int
    held: int = 0
    _queue: deque[tuple[float, bytes]] = field(default_factory=deque)
    _last_release: float = float("-inf")

    def full(self) -> bool:
        return self.held >= self.capacity

    def push(self, now: float, data: bytes) -> float:
        """Take ``data`` that arrived at ``now``; return when it may leave."""
        release = max(now + self.delay_s, self._last_release)
        self._last_release = release
        self._queue.append((release, data))
        self.held += len(data)
        return release

    def next_release(self) -> float | None:
        return self._queue[0][0] if self._queue else None

    def pop_due(self, now: float) -> bytes:
        """Every byte due at ``now``, joined (empty if nothing is due)."""
        out = []
        while self._queue and self._queue[0][0] <= now:
            data = self._queue.popleft()[1]
            self.held -= len(data)
            out.append(data)
        return b"".join(out)


async def _pipe(
    src: asyncio.StreamReader, dst: asyncio.StreamWriter, delay_s: float, capacity: int
) -> None:
    """Relay ``src`` to ``dst`` through a :class:`DelayLine`; close ``dst`` at EOF."""
    loop = asyncio.get_running_loop()
    line = DelayLine(delay_s, capacity)
    changed = asyncio.Event()
    eof = False

    async def read() -> None:
        nonlocal eof
        try:
            while True:
                while line.full():
                    changed.clear()
                    await changed.wait()
                data = await src.read(CHUNK)
                if not data:
                    return
                line.push(loop.time(), data)
                changed.set()
        finally:
            eof = True
            changed.set()

    async def write() -> None:
        while True:
            due = line.next_release()
            if due is None:
                if eof:
                    return
                changed.clear()
                await changed.wait()
                continue
            wait = due - loop.time()
            if wait > 0:
                # The emulated propagation delay itself, not a synchronisation.
                await asyncio.sleep(wait)
            dst.write(line.pop_due(loop.time()))
            changed.set()  # room for the reader again
            await dst.drain()

    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(read())
            tg.create_task(write())
    except* (ConnectionError, OSError):
        pass  # one side went away: the other is closed below, as a cut link would be
    finally:
        dst.close()


def _handler(route: Route, delay_s: float, capacity: int):  # type: ignore[no-untyped-def]
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                route.target_host, route.target_port
            )
        except OSError as exc:
            print(f"wan: cannot reach {route.target_host}:{route.target_port}: {exc}",
                  file=sys.stderr, flush=True)  # fmt: skip
            writer.close()
            return
        try:
            await asyncio.gather(
                _pipe(reader, up_writer, delay_s, capacity),
                _pipe(up_reader, writer, delay_s, capacity),
            )
        except asyncio.CancelledError:
            # The proxy is stopping (SIGTERM): the link is cut. Ending the handler quietly
            # keeps asyncio's server from logging the cancellation as a handler error.
            return

    return handle


async def serve(routes: list[Route], delay_s: float, capacity: int, ready: Path | None) -> None:
    """Listen on every route until SIGTERM/SIGINT; touch ``ready`` once all listen."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    servers = [
        await asyncio.start_server(
            _handler(r, delay_s, capacity), r.listen_host, r.listen_port, reuse_address=True
        )
        for r in routes
    ]
    if ready:
        ready.write_text("ready\n")  # noqa: ASYNC240 - once, before serving anything
    await stop.wait()
    for s in servers:
        s.close()
        with contextlib.suppress(Exception):
            await s.wait_closed()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.wan", description=__doc__)
    p.add_argument("--route", action="append", required=True, help="LISTEN=HOST:PORT")
    p.add_argument("--delay-ms", type=float, default=25.0, help="added each way")
    p.add_argument("--buffer-mb", type=int, default=16, help="held per direction at most")
    p.add_argument("--ready", type=Path, help="touched once every route listens")
    args = p.parse_args(argv)
    try:
        routes = [parse_route(r) for r in args.route]
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    asyncio.run(serve(routes, args.delay_ms / 1000, args.buffer_mb * 1024 * 1024, args.ready))


if __name__ == "__main__":
    main()
