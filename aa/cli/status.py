"""`aa status`: per DC, the age and end-to-end latency of every remote DC's newest heartbeat,
and each flow's total lag."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import orjson

from aa.config import Topology, client_kwargs, load_config
from aa.heartbeat.model import HeartbeatView, RemoteView
from aa.heartbeat.tasks import heartbeat_topics
from aa.tail import TopicReader


def register(sub: Any) -> None:
    p = sub.add_parser("status", help="heartbeat age and latency per DC pair")
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_status)


async def heartbeat_views(topology: Topology) -> dict[str, HeartbeatView | str]:
    """Per DC its view of the others (or the error reaching it)."""

    async def one(dc: str) -> HeartbeatView | str:
        view = HeartbeatView(dc)
        client = client_kwargs(topology.datacenter(dc))
        try:
            for topic in heartbeat_topics(topology):
                async with TopicReader(topic, client, last=200) as reader:
                    now = int(time.time() * 1000)
                    for r in await asyncio.wait_for(reader.catch_up(), 20):
                        view.add(r.value, r.headers, now)
        except Exception as exc:  # noqa: BLE001 - an unreachable DC is part of the status
            return f"unreachable: {exc!r}"
        return view

    views = await asyncio.gather(*(one(dc) for dc in topology.dc_names))
    return dict(zip(topology.dc_names, views, strict=True))


def _rows(topology: Topology, views: dict[str, HeartbeatView | str]) -> list[dict[str, Any]]:
    now = int(time.time() * 1000)
    rows: list[dict[str, Any]] = []
    for local, view in views.items():
        for f in topology.inbound(local):
            entry: dict[str, Any] = {"local": local, "remote": f.source}
            if isinstance(view, str):
                entry["error"] = view
            else:
                remote: RemoteView | None = view.remotes.get(f.source)
                if remote is None:
                    entry["error"] = "no heartbeat seen"
                else:
                    entry["age_s"] = round(remote.age_s(now), 3)
                    entry["latency_s"] = round(remote.latency_s, 3)
            rows.append(entry)
    return rows


def _status(args: argparse.Namespace) -> int:
    topology = load_config(args.config)
    rows = _rows(topology, asyncio.run(heartbeat_views(topology)))
    if args.json:
        print(orjson.dumps(rows).decode())
    else:
        print("local  remote  heartbeat_age_s  latency_s")
        for r in rows:
            if "error" in r:
                print(f"{r['local']:<6} {r['remote']:<7} {r['error']}")
            else:
                print(f"{r['local']:<6} {r['remote']:<7} {r['age_s']:<16} {r['latency_s']}")
    stale = [r for r in rows if "error" in r or r["age_s"] > 3 * topology.heartbeats.interval_s]
    return 1 if stale else 0
