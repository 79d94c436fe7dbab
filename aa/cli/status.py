"""`aa status`: one screen per DC — its inbound flows and their state, lag in records and
seconds, replication latency, heartbeat age, restarts and last error, and catch-up progress.

Lag and heartbeats are read from Kafka (they work with no `aa run` reachable); state, restarts,
last error, latency and catch-up rate come from each DC's `aa run` (`/healthz`, `/metrics`),
given with ``--metrics DC=URL``. ``--watch`` refreshes; ``--json`` is for scripts."""

from __future__ import annotations

import argparse
import asyncio
import time
import urllib.request
from typing import Any

import orjson
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from aa.cli.options import topology_command
from aa.cli.reach import known_dc, probe, short_cause
from aa.cli.status_model import DcStatus, ProcessSnapshot, build, flow_metrics, problems
from aa.config import Topology, client_kwargs, load_config
from aa.errors import AaError
from aa.heartbeat.model import HeartbeatView
from aa.heartbeat.tasks import heartbeat_topics
from aa.lag import PartitionLag, flow_lag
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
        help="where DC's `aa run` serves /metrics and /healthz, e.g. NYC=http://10.0.0.5:9464 "
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


async def read_process(url: str) -> ProcessSnapshot:
    snap = ProcessSnapshot(url)
    try:
        snap.health = orjson.loads(await asyncio.to_thread(_get, f"{url}/healthz"))
        snap.metrics = flow_metrics((await asyncio.to_thread(_get, f"{url}/metrics")).decode())
    except OSError as exc:
        # urllib raises HTTPError for 503 (a flow not running): its body is still the health
        body = exc.read() if hasattr(exc, "read") else b""
        if body:
            snap.health = orjson.loads(body)
            snap.metrics = flow_metrics((await asyncio.to_thread(_get, f"{url}/metrics")).decode())
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
    procs = await asyncio.gather(*(read_process(u) for u in urls.values()))
    return build(
        topology,
        reach,
        {f.name: lag for f, lag in zip(flows, lags, strict=True)},
        dict(zip(up, views, strict=False)),
        dict(zip(urls, procs, strict=True)),
        int(time.time() * 1000),
    )


def _num(v: float | int | None, fmt: str = "{:.1f}", unit: str = "") -> str:
    return "-" if v is None else fmt.format(v) + unit


def _eta(f: Any) -> str:
    if f.lag_records == 0:
        return "caught up"
    if f.lag_stale_s is not None:
        return f"no lag read for {f.lag_stale_s:.0f}s"
    if f.rate and f.eta_s is not None:
        return f"{f.rate:,.0f}/s, ETA {f.eta_s:.0f}s"
    return "-"


LAST_ERROR_WIDTH = 60
"""The last-error column's width; longer errors wrap over several lines."""

STATE_STYLE = {"running": "green", "starting": "cyan", "backoff": "yellow", "failed": "bold red"}


def render(dcs: list[DcStatus], stale_after_s: float) -> Group:
    tables = []
    for d in dcs:
        head = Text(f"{d.dc}  {d.bootstrap}  ", style="bold")
        head.append(
            "reachable" if d.reachable else f"UNREACHABLE ({d.error})",
            style="green" if d.reachable else "bold red",
        )
        proc = d.process or "no --metrics URL"
        head.append(f"  aa run: {proc}" + (f" ({d.process_error})" if d.process_error else ""))
        t = Table(title=head, title_justify="left", expand=False, show_lines=False)
        for col in (
            "flow",
            "state",
            "lag",
            "lag s",
            "latency p50/p99",
            "heartbeat",
            "restarts",
            "catch-up",
            "last error",
        ):
            t.add_column(
                col,
                justify="right" if col in ("lag", "lag s", "restarts") else "left",
                # a long error wraps in its column (at words), never cut: it says what to fix
                max_width=LAST_ERROR_WIDTH if col == "last error" else None,
                overflow="fold",
            )
        for f in d.flows:
            hb = _num(f.heartbeat_age_s, unit="s")
            hb_style = "red" if (f.heartbeat_age_s or 0) > stale_after_s else ""
            lat = (
                f"{_num(f.latency_p50_s, '{:.3f}')}/{_num(f.latency_p99_s, '{:.3f}')}s"
                if f.latency_p50_s is not None
                else "-"
            )
            t.add_row(
                f.flow,
                Text(f.state, style=STATE_STYLE.get(f.state, "yellow")),
                _num(f.lag_records, "{:,}"),
                _num(f.lag_seconds),
                lat,
                Text(hb, style=hb_style),
                _num(f.restarts, "{}"),
                _eta(f),
                Text(f.last_error or "-", style="red" if f.last_error else ""),
            )
        for name, task in sorted(d.tasks.items()):
            if task.get("restarts") or task.get("last_error"):
                t.add_row(
                    name,
                    Text(str(task.get("state")), style="yellow"),
                    "",
                    "",
                    "",
                    "",
                    str(task.get("restarts", 0)),
                    "",
                    str(task.get("last_error") or "-"),
                )
        tables.append(t)
    return Group(*tables)


def _status(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    urls = parse_metrics_urls(topology, args.metrics)
    stale = max(STALE_MIN_S, 3 * topology.heartbeats.interval_s)
    console = Console(width=None if Console().is_terminal else 160)
    if args.watch is not None and not args.json:
        try:
            with Live(console=console, auto_refresh=False) as live:
                while True:
                    dcs = asyncio.run(collect(topology, urls))
                    live.update(render(dcs, stale), refresh=True)
                    time.sleep(args.watch)  # a refresh period, not synchronisation
        except KeyboardInterrupt:
            return 0
    dcs = asyncio.run(collect(topology, urls))
    if args.json:
        print(orjson.dumps({"dcs": [d.to_json() for d in dcs]}).decode())
    else:
        console.print(render(dcs, stale))
    found = problems(dcs, stale)
    if found and not args.json:
        console.print(Text("attention: " + "; ".join(found), style="bold red"))
    return 1 if found else 0
