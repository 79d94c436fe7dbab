"""The story the demo tells once clusters and mirrors run (see examples/demo.py)."""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aa.cli.status_model import flow_metrics
from conflict import EventWriter, Materializer, PatternConsumer, ResolverRegistry
from examples.demo_failover import aa, dc_goes_down
from examples.steps import run_child, say

if TYPE_CHECKING:
    from examples.demo import Demo

DCS = ("SF", "NYC", "LON")
TOPIC = "orders"
BOOKS = ["Dune", "Emma", "Ulysses", "Beloved", "Kindred", "Middlemarch"]


async def write_conflicts(clusters: dict[str, str], keys: int) -> int:
    say("3. applications write in every DC at once: same users, different books")
    writers = {dc: EventWriter(dc, TOPIC, bootstrap_servers=b) for dc, b in clusters.items()}
    for w in writers.values():
        await w.start()
    try:
        # the seed scenario: alice orders Dune in SF and Emma in NYC within the same second
        a, b = await asyncio.gather(
            writers["SF"].write("alice", "order", {"book": "Dune"}),
            writers["NYC"].write("alice", "order", {"book": "Emma"}),
        )
        print(f"   SF  wrote alice -> Dune  (hlc {a.hlc.encode()})")
        print(f"   NYC wrote alice -> Emma  (hlc {b.hlc.encode()})")
        rng = random.Random(7)  # noqa: S311 - demo data, not security
        for w in writers.values():
            for i in range(keys):
                await w.write(f"user-{i}", "order", {"book": rng.choice(BOOKS)}, wait=False)
            await w.flush()
        print(f"   + {keys} users with an order from each of {', '.join(DCS)} (concurrent)")
    finally:
        for w in writers.values():
            await w.stop()
    return 2 + keys * len(DCS)


async def wait_replicated(clusters: dict[str, str], total: int, timeout: float = 180) -> None:
    say("4. the mirrors copy every event to every other DC, exactly once, without loops")
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from aa.admin import ClusterAdmin

    consumers = {}
    for dc, bootstrap in clusters.items():
        async with ClusterAdmin(dc, bootstrap_servers=bootstrap) as admin:
            partitions = (await admin.topics())[TOPIC].partitions
        consumers[dc] = (
            AIOKafkaConsumer(bootstrap_servers=bootstrap),
            [TopicPartition(TOPIC, p) for p in range(partitions)],
        )
        await consumers[dc][0].start()
    try:
        # every DC holds the same number of events (this run's and any earlier run's), and
        # that number stays put for a second: the mirrors have nothing left to copy
        deadline, stable_since = time.monotonic() + timeout, 0.0
        last: dict[str, int] = {}
        with Progress(
            TextColumn("   {task.description:<4}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=True,
        ) as bar:
            bars = {dc: bar.add_task(dc, total=None) for dc in consumers}
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the DCs did not converge within {timeout:.0f}s: {last}")
                held = {
                    dc: sum((await c.end_offsets(tps)).values())
                    for dc, (c, tps) in consumers.items()
                }
                most = max(held.values())
                for dc, n in held.items():
                    bar.update(bars[dc], completed=n, total=most)
                if held != last:
                    last, stable_since = held, time.monotonic()
                elif (
                    len(set(held.values())) == 1
                    and min(held.values()) >= total
                    and time.monotonic() - stable_since > 1.0
                ):
                    break
                await asyncio.sleep(0.2)
    finally:
        for c, _ in consumers.values():
            await c.stop()
    for dc, n in last.items():
        print(f"   {dc:<4} holds {n} events (local + mirrored)")


async def converged_view(clusters: dict[str, str]) -> dict[str, str]:
    say("5. every DC folds the same events into the same state (multi-value: ship both books)")
    digests = {}
    registry = ResolverRegistry(default="multi-value")
    for dc, bootstrap in clusters.items():
        async with PatternConsumer(
            f"^{TOPIC}$", Materializer(registry), bootstrap_servers=bootstrap
        ) as view:
            await view.catch_up()
            alice = view.get("alice")
            books = [v["value"]["book"] for v in alice]
            digests[dc] = view.materializer.digest()
            print(
                f"   {dc:<4} alice -> {books}   state digest {digests[dc][:16]}  "
                f"({len(view.materializer)} users)"
            )
    # the same events under another resolver: a second view of SF's copy, folded with LWW
    async with PatternConsumer(
        f"^{TOPIC}$",
        Materializer(ResolverRegistry(default="lww")),
        bootstrap_servers=clusters["SF"],
    ) as lww:
        await lww.catch_up()
        print(
            f"        with last-writer-wins instead: alice -> {lww.get('alice')['book']} "
            "(the same winner in every DC)"
        )
    same = len(set(digests.values())) == 1
    print(f"   converged: {'yes, byte-identical in every DC' if same else 'NO'}")
    return digests


IN_FLIGHT = 10  # records a caught-up flow may show as lag: the last batch, not yet committed


def _inbound(demo: Demo) -> dict[str, dict[str, float]]:
    """Each running mirror's inbound flows, as its `/metrics` page shows them."""
    import urllib.request

    out: dict[str, dict[str, float]] = {}
    for dc, url in demo.metrics.items():
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as resp:  # noqa: S310 - our own local endpoint
            flows = flow_metrics(resp.read().decode())
        out |= {n: m for n, m in flows.items() if n.endswith(f"->{dc}") and "records" in m}
    return out


def read_metrics(demo: Demo, config: Path, timeout: float = 60) -> None:
    say("6. replication latency and lag, from aa's own metrics (and `aa status`)")
    # every event is everywhere (step 4): wait until each flow's lag gauge has been read since
    # (a gauge is refreshed every `metrics.lag_interval_s`; it counts the user's topics only,
    # not aa's heartbeats)
    deadline = time.monotonic() + timeout
    flows = _inbound(demo)
    while any(m.get("lag_records", 0) > IN_FLIGHT for m in flows.values()) and (
        time.monotonic() < deadline
    ):
        time.sleep(1)
        flows = _inbound(demo)
    for name, m in sorted(flows.items()):
        p50, p99 = m.get("latency_p50_s"), m.get("latency_p99_s")
        lat = (
            "-"
            if p50 is None or p99 is None
            else f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"
        )
        print(
            f"   {name:<9} copied {m['records']:>6.0f}  latency {lat:<24} "
            f"lag {m.get('lag_records', 0):.0f} records"
        )
    aa("status", "--config", str(config), *demo.status_args())


def reconcile_command(config: Path, out: Path) -> list[str]:
    """`aa reconcile` of the demo's topic, the last hour, on a local Spark."""
    return [
        sys.executable,
        "-m",
        "aa.cli.main",
        "--log-format",
        "json",
        "reconcile",
        "--config",
        str(config),
        "--since",
        "1h",
        "--until",
        "now",
        "--out",
        str(out),
        "--events",
        f"{TOPIC}=multi-value",
        "--master",
        "local[2]",
    ]


async def reconcile(config: Path, out: Path) -> dict[str, Any]:
    say("12. the nightly reconcile job (PySpark) proves it: missing, duplicated, looped, divergent")
    log = out.parent / "reconcile.log"
    code = await run_child(reconcile_command(config, out), log)
    return show_summary(out, code, log)


def show_summary(out: Path, code: int, log: Path) -> dict[str, Any]:
    """Print what the reconcile job in ``out`` found; its summary."""
    summary: dict[str, Any] = {}
    path = out / "summary.json"
    if path.exists():
        summary = orjson.loads(path.read_bytes())
    counts = summary.get("counts") or summary.get("findings") or {}
    print(f"   exit code {code} ({'within thresholds' if code == 0 else 'see ' + str(log)})")
    if counts:
        print(
            "   findings: "
            + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()) if not isinstance(v, dict))
        )
    print(f"   report: {out / 'report.html'}  summary: {path}")
    return summary


async def story(demo: Demo, config: Path, args: argparse.Namespace) -> None:
    clusters = demo.bootstraps
    total = await write_conflicts(clusters, args.keys)
    await wait_replicated(clusters, total)
    demo.check_mirrors()
    await converged_view(clusters)
    await asyncio.to_thread(read_metrics, demo, config)
    await dc_goes_down(demo, config)
    demo.check_mirrors()
    if args.no_reconcile:
        say("12. reconcile skipped (--no-reconcile)")
    else:
        await reconcile(config, args.out / "reconcile")
