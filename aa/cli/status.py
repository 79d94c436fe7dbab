"""`aa status`: one screen per DC — its inbound flows and their state, lag in records and
seconds, replication latency, heartbeat age, restarts and last error, and catch-up progress.

Lag and heartbeats are read from Kafka (they work with no `aa run` reachable); state, restarts,
last error, latency and catch-up rate come from each DC's `aa run` (`/healthz`, `/metrics`),
given with ``--metrics DC=URL``. ``--watch`` refreshes; ``--json`` is for scripts."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import orjson
from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from aa.cli.options import topology_command
from aa.cli.reach import known_dc, probe, short_cause
from aa.cli.status_model import DcStatus, ProcessSnapshot, build, flow_metrics, problems
from aa.cli.status_view import render
from aa.config import Topology, client_kwargs, load_config
from aa.errors import AaError
from aa.heartbeat.model import HeartbeatView
from aa.heartbeat.tasks import heartbeat_topics
from aa.lag import PartitionLag, flow_lag, holds_heartbeats
from aa.logs import quiet_client_logs
from aa.tail import TopicReader

READ_TIMEOUT_S = 20.0
HTTP_TIMEOUT_S = 3.0
STALE_MIN_S = 10.0
"""A heartbeat is stale after three intervals, and never before this (a busy host)."""


def register(sub: Any) -> None:
    p = topology_command(
        sub, "status", "per DC: flows, lag, latency, heartbeats, restarts, errors", __doc__
    )
    p.add_argument(
        "--metrics",
        action="append",
        default=[],
        metavar="DC=URL",
        help="where DC's aa run serves /metrics and /healthz, e.g. NYC=http://10.0.0.5:9464 "
        "(repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (one document)")
    p.add_argument(
        "--watch",
        type=float,
        nargs="?",
        const=2.0,
        default=None,
        metavar="SECONDS",
        help="refresh every SECONDS (default 2) until Ctrl-C",
    )
    p.set_defaults(func=_status)


def parse_metrics_urls(topology: Topology, raw: list[str]) -> dict[str, str]:
    out = {}
    for item in raw:
        dc, sep, url = item.partition("=")
        if not sep or not url:
            raise AaError(f"--metrics {item!r}: write DC=URL, e.g. NYC=http://127.0.0.1:9465")
        known_dc(topology, dc, "--metrics")
        out[dc] = url.rstrip("/") if "://" in url else f"http://{url.rstrip('/')}"
    return out


async def heartbeat_view(topology: Topology, dc: str) -> HeartbeatView | str:
    """DC's view of the other DCs' heartbeats (or why it could not be read)."""
    view = HeartbeatView(dc)
    client = client_kwargs(topology.datacenter(dc))
    try:
        for topic in heartbeat_topics(topology):
            async with TopicReader(topic, client, last=200) as reader:
                now = int(time.time() * 1000)
                for r in await asyncio.wait_for(reader.catch_up(), READ_TIMEOUT_S):
                    view.add(r.value, r.headers, now)
    except Exception as exc:  # noqa: BLE001 - an unreadable topic is part of the status
        return short_cause(exc)
    return view


async def _lag(topology: Topology, name: str) -> list[PartitionLag] | str:
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            return await flow_lag(topology, topology.flow(name))
    except Exception as exc:  # noqa: BLE001 - shown in the flow's row
        return short_cause(exc)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as resp:  # noqa: S310 - http(s) URL given by the operator
        body: bytes = resp.read()
        return body


async def read_process(
    url: str, heartbeats: Callable[[str], bool] | None = None
) -> ProcessSnapshot:
    """``url``'s `/healthz` and `/metrics` (``heartbeats``: the topics of aa's heartbeats,
    left out of records and lag)."""
    snap = ProcessSnapshot(url)

    async def page() -> dict[str, dict[str, float]]:
        return flow_metrics((await asyncio.to_thread(_get, f"{url}/metrics")).decode(), heartbeats)

    try:
        snap.health = orjson.loads(await asyncio.to_thread(_get, f"{url}/healthz"))
        snap.metrics = await page()
    except OSError as exc:
        # urllib raises HTTPError for 503 (a flow not running): its body is still the health
        body = exc.read() if hasattr(exc, "read") else b""
        if body:
            snap.health = orjson.loads(body)
            snap.metrics = await page()
        else:
            snap.error = short_cause(exc)
    return snap


async def collect(topology: Topology, urls: dict[str, str]) -> list[DcStatus]:
    dcs = list(topology.dc_names)
    with quiet_client_logs():
        causes = await asyncio.gather(*(probe(topology, dc) for dc in dcs))
        reach = dict(zip(dcs, causes, strict=True))
        up = [dc for dc in dcs if reach[dc] is None]
        flows = [f for f in topology.flows if reach[f.source] is None and reach[f.target] is None]
        lags = await asyncio.gather(*(_lag(topology, f.name) for f in flows))
        views: list[HeartbeatView | str] = []
        if topology.heartbeats.enabled:
            views = list(await asyncio.gather(*(heartbeat_view(topology, dc) for dc in up)))
    hb = holds_heartbeats(topology)
    procs = await asyncio.gather(*(read_process(u, hb) for u in urls.values()))
    return build(
        topology,
        reach,
        {f.name: lag for f, lag in zip(flows, lags, strict=True)},
        dict(zip(up, views, strict=False)),
        dict(zip(urls, procs, strict=True)),
        int(time.time() * 1000),
    )


def _frame(dcs: list[DcStatus], stale: float, as_json: bool) -> tuple[Any, list[str]]:
    """What one look prints (a JSON document, or the tables and the problems) and the
    problems that make the exit code 1."""
    found = problems(dcs, stale)
    if as_json:
        return orjson.dumps({"dcs": [d.to_json() for d in dcs]}).decode(), found
    lines = [Text(f"attention: {p}", style="bold red") for p in found]
    return Group(render(dcs, stale), *lines), found


def collect_now(topology: Topology, urls: dict[str, str]) -> list[DcStatus]:
    """:func:`collect`, run in a thread of its own so that Ctrl-C stops `aa status` at once
    (exit 130): in the main thread, asyncio.run cancels its task on Ctrl-C and, when a client
    library held on to that cancellation and the read ended normally, went on as if nothing
    had been pressed (a watch never stopped)."""
    done: list[list[DcStatus]] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            done.append(asyncio.run(collect(topology, urls)))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=work, name="aa-status-read", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)  # a KeyboardInterrupt lands here, in the main thread
    if failed:
        raise failed[0]
    return done[0]


def _status(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    urls = parse_metrics_urls(topology, args.metrics)
    stale = max(STALE_MIN_S, 3 * topology.heartbeats.interval_s)
    terminal = Console().is_terminal
    console = Console(width=None if terminal else 160)

    def look() -> tuple[Any, list[str]]:
        return _frame(collect_now(topology, urls), stale, args.json)

    if args.watch is None:
        shown, found = look()
        if args.json:
            print(shown)
        else:
            console.print(shown)
        return 1 if found else 0
    # until Ctrl-C (exit 130): redrawn in place on a terminal; elsewhere (a file, a pipe) one
    # frame after the other, each flushed as soon as it is read
    live = Live(console=console, auto_refresh=False) if terminal and not args.json else None
    with live or contextlib.nullcontext():
        while True:
            shown, _ = look()
            if live is not None:
                live.update(shown, refresh=True)
            elif args.json:
                print(shown, flush=True)
            else:
                console.print(Text(time.strftime("== %Y-%m-%dT%H:%M:%S%z"), style="bold"), shown)
                console.file.flush()
            time.sleep(args.watch)  # a refresh period, not synchronisation
