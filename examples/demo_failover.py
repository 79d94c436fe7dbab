"""The second half of the demo: a DC goes down, a consumer group fails over, the DC comes back
and the group fails back (see examples/demo.py). Everything through `aa` commands and public
APIs, the way an operator would do it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aiokafka import AIOKafkaConsumer, TopicPartition
from rich.console import Console

from aa.admin import ClusterAdmin
from aa.dev import cluster
from conflict import EventWriter
from examples.steps import say

if TYPE_CHECKING:
    from examples.demo import Demo

TOPIC = "orders"
GROUP = "shipping"
console = Console(highlight=False)


def aa(*args: str, show: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one `aa` command the way an operator types it; print what it prints."""
    cmd = [sys.executable, "-m", "aa.cli.main", "--log-level", "WARNING", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if show:
        print(f"   $ aa {' '.join(args)}")
        for line in (done.stdout + done.stderr).rstrip().splitlines():
            print(f"     {line}")
    return done


async def poll(what: str, check: Callable[[], Awaitable[bool]], timeout: float = 240) -> None:
    """Wait for ``check`` with a spinner; a clear error when it never holds."""
    deadline = time.monotonic() + timeout
    with console.status(f"   waiting: {what}"):
        while not await check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout:.0f}s")
            await asyncio.sleep(1)


async def read_group(bootstrap: str, group: str) -> list[tuple[bytes, bytes]]:
    """What ``group`` reads of ``orders`` from its committed offsets (or the beginning) to the
    current end; commits when done, like an application that processed them."""
    async with ClusterAdmin("demo", bootstrap_servers=bootstrap) as admin:
        partitions = (await admin.topics())[TOPIC].partitions
    async with AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    ) as consumer:
        tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        seen: list[tuple[bytes, bytes]] = []
        while any([await consumer.position(tp) < ends[tp] for tp in tps]):
            batch = await consumer.getmany(timeout_ms=1000)
            seen += [
                (r.key or b"", r.value or b"")
                for records in batch.values()
                for r in records
                if r.offset < ends[TopicPartition(r.topic, r.partition)]
            ]
        await consumer.commit()
        return seen


async def dc_goes_down(demo: Demo, config: Path) -> None:
    sf = next(c for c in demo.clusters if c.name == "SF")
    nyc = demo.bootstraps["NYC"]
    cfg = str(config)

    say(f"7. an application group `{GROUP}` processes every order in SF")
    read = await read_group(sf.bootstrap, GROUP)
    print(f"   {GROUP} read {len(read)} orders in SF and committed its offsets there")
    before = set(read)

    async def checkpointed() -> bool:
        probe = ["failover", "--config", cfg, "--group", GROUP, "--to", "NYC", "--from", "SF"]
        return aa(*probe, "--translate", show=False).returncode == 0

    await poll(f"NYC's mirror checkpoints {GROUP}'s SF offsets into NYC", checkpointed)
    print(f"   NYC holds a checkpoint of {GROUP}: its SF position translated into NYC offsets")

    say("8. SF goes down: its broker and its `aa run` stop (a datacenter outage)")
    demo.stop_mirror("SF")
    await asyncio.to_thread(cluster.stop, sf)
    print("   SF is unreachable; NYC and LON keep taking orders:")
    async with EventWriter("NYC", TOPIC, bootstrap_servers=nyc) as w:
        for i in range(5):
            await w.write(f"outage-{i}", "order", {"book": "Dune"})
    print("   NYC wrote 5 orders during the outage (outage-0 .. outage-4)")
    aa("status", "--config", cfg, *demo.status_args())

    say(f"9. fail {GROUP} over to NYC: `aa failover` (dry run first, then --execute)")
    failover = ["failover", "--config", cfg, "--group", GROUP, "--to", "NYC", "--from", "SF"]
    aa(*failover, "--translate")
    done = aa(*failover, "--translate", "--execute", show=True)
    if done.returncode != 0:
        raise RuntimeError(f"aa failover --execute exited {done.returncode}")
    resumed = await read_group(nyc, GROUP)
    again = sum(1 for r in resumed if r in before)
    missed = {f"outage-{i}".encode() for i in range(5)} - {k for k, _ in resumed}
    if missed:
        raise RuntimeError(f"{GROUP} did not read the outage's orders {sorted(missed)} in NYC")
    print(
        f"   {GROUP} resumed in NYC: {len(resumed) - again} orders it had not seen (all 5 of the "
        f"outage's), {again} read again: nothing lost, duplicates as the plan's basis allows"
    )

    say("10. SF comes back: its broker and its `aa run` start again")
    await asyncio.to_thread(cluster.up, [sf])
    demo.start_mirror("SF", config)

    async def resynced() -> bool:
        probe = ["failback", "--config", cfg, "--group", GROUP, "--to", "SF", "--from", "NYC"]
        out = aa(*probe, show=False)
        return out.returncode == 0 and "resync NYC->SF: complete" in out.stdout

    await poll("the NYC->SF flow copies what SF missed", resynced)

    say(f"11. fail {GROUP} back to SF: `aa failback` (dry run first, then --execute)")
    failback = ["failback", "--config", cfg, "--group", GROUP, "--to", "SF", "--from", "NYC"]
    aa(*failback)
    done = aa(*failback, "--execute")
    if done.returncode != 0:
        raise RuntimeError(f"aa failback --execute exited {done.returncode}")
    home = await read_group(sf.bootstrap, GROUP)
    print(f"   {GROUP} is home in SF: {len(home)} orders left to read there")
