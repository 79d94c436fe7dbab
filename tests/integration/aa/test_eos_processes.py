"""More than one `aa run` per exactly-once flow (``exactly_once.partition_sets``): the flow's
group gives each process whole partition sets, each copied in transactions of its own id; a
process killed with SIGKILL loses its sets to the other, which fences it and resumes from the
stored positions; a process started again gets sets back. A read_committed consumer of the
target sees each record once, and the stored positions are the source's end offsets. A
process stopped (SIGSTOP) long enough for the group to drop it is a zombie: the process that
took its set over fenced it, so what it copies once woken commits nothing, and it rejoins."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from aa.config.load import load_config
from aa.mirror.build import flow_settings
from aa.mirror.positions import stored_offsets
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.processes import AaProcess, eos_topology, note_logs

pytestmark = pytest.mark.integration

PARTITIONS = 6


def held_sets(proc: AaProcess) -> list[int] | None:
    """The partition sets ``proc`` was given last (``None``: none yet)."""
    last = None
    for line in proc.output().splitlines():
        if '"partition_sets_assigned"' in line:
            last = orjson.loads(line[line.index("{") :])["sets"]
    return last


async def write(sf: str, topic: str, start: int, end: int) -> None:
    """Records ``start`` .. ``end`` - 1, round robin over the partitions, paced in steps so
    that the stream lasts across a kill and a rebalance."""
    step = 1_500
    for first in range(start, end, step):
        await produce(
            sf,
            topic,
            [
                Rec(None, f"{i}".encode(), partition=i % PARTITIONS)
                for i in range(first, first + step)
            ],
        )
        await asyncio.sleep(0.2)


@dataclass(frozen=True, slots=True)
class TwoSetFlow:
    """A topic of the source and an exactly-once flow of it in 2 partition sets."""

    sf: str
    nyc: str
    topic: str
    config: Path
    args: list[str]

    def start(self, name: str) -> AaProcess:
        return AaProcess(self.args, self.config.parent / f"{name}.log")


async def two_set_flow(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> TwoSetFlow:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("eos-sets"), partitions=PARTITIONS)
    config, args = eos_topology(
        tmp_path / "t.yaml", sf, nyc, topic,
        exactly_once={"partition_sets": 2}, tuning={"commit_interval_s": 0.5},
    )  # fmt: skip
    return TwoSetFlow(sf, nyc, topic, config, args)


async def taken_over(
    survivor: AaProcess, gone: Callable[[], None], sf: str, nyc: str, topic: str, end: int
) -> None:
    """Records ``end`` - 12,000 .. ``end`` - 1 written while ``gone`` makes the other process
    leave the group (a second into the stream): the survivor takes both sets and every record
    is committed in the target."""
    writer = asyncio.create_task(write(sf, topic, end - 12_000, end))
    await asyncio.sleep(1.0)
    gone()
    await eventually(
        lambda: held_sets(survivor) == [0, 1], timeout=120, message="the survivor holds both"
    )
    await writer
    await consume_all(nyc, topic, count=end, timeout=120, isolation_level="read_committed")


async def each_holds_one_set(*procs: AaProcess) -> None:
    await eventually(
        lambda: (
            sorted(s for p in procs for s in held_sets(p) or []) == [0, 1]
            and all(held_sets(p) for p in procs)
        ),
        timeout=120,
        message="each process holds one partition set",
    )


async def assert_exactly_once(nyc: str, topic: str, config: Path, total: int) -> None:
    """Each record once in read_committed, and the stored positions at the end offsets."""
    got = await consume_all(
        nyc, topic, count=total, timeout=120, isolation_level="read_committed", settle=3.0
    )
    counts = Counter(r.value for r in got)
    assert len(counts) == total, f"missing {total - len(counts)}"
    dupes = {v: n for v, n in counts.items() if n > 1}
    assert not dupes, f"{len(dupes)} copied twice, e.g. {list(dupes)[:5]}"
    topology = load_config(config)
    stored, _ = await stored_offsets(flow_settings(topology, topology.flows[0]))
    mine = {tp.partition: o for tp, o in stored.items() if tp.topic == topic}
    assert mine == dict.fromkeys(range(PARTITIONS), total // PARTITIONS)


async def test_two_processes_copy_one_exactly_once_flow_and_take_over_after_kill9(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    f = await two_set_flow(tmp_path, dc_clusters, unique_name)
    sf, nyc, topic, config = f.sf, f.nyc, f.topic, f.config
    procs = [first, second] = [f.start("first"), f.start("second")]
    try:
        await each_holds_one_set(first, second)  # both copy: a set each before any record
        await write(sf, topic, 0, 12_000)
        await consume_all(nyc, topic, count=12_000, timeout=120, isolation_level="read_committed")
        assert [first.proc.poll(), second.proc.poll()] == [None, None], "a process stopped"

        # kill -9 in the middle of a stream: the survivor takes the dead one's set over
        await taken_over(first, second.kill9, sf, nyc, topic, 24_000)

        # started again, it is given a set back (it was fenced, not stopped for good)
        third = f.start("third")
        procs.append(third)
        await each_holds_one_set(first, third)
        await write(sf, topic, 24_000, 30_000)
        await assert_exactly_once(nyc, topic, config, 30_000)
        assert [first.proc.poll(), third.proc.poll()] == [None, None], "a process stopped"
    except Exception as failed:
        note_logs(failed, procs)
        raise
    finally:
        codes = [p.stop() for p in procs]
    assert [codes[0], codes[2]] == [0, 0], codes  # SIGTERM: drained, committed, exit 0


async def test_a_zombie_process_of_an_exactly_once_flow_is_fenced_and_rejoins(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    f = await two_set_flow(tmp_path, dc_clusters, unique_name)
    first, zombie = f.start("first"), f.start("zombie")
    try:
        await each_holds_one_set(first, zombie)
        freeze = lambda: zombie.proc.send_signal(signal.SIGSTOP)  # noqa: E731
        await taken_over(first, freeze, f.sf, f.nyc, f.topic, 12_000)  # frozen mid-transaction
        zombie.proc.send_signal(signal.SIGCONT)  # it copies on, fenced, then rejoins
        await each_holds_one_set(first, zombie)
        await write(f.sf, f.topic, 12_000, 18_000)
        await assert_exactly_once(f.nyc, f.topic, f.config, 18_000)
        assert [first.proc.poll(), zombie.proc.poll()] == [None, None], "a process stopped"
    except Exception as failed:
        note_logs(failed, [first, zombie])
        raise
    finally:
        codes = [first.stop(), zombie.stop()]
    assert codes == [0, 0], codes


async def test_a_process_with_another_partition_sets_is_refused_by_the_flows_group(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    f = await two_set_flow(tmp_path, dc_clusters, unique_name)
    other = tmp_path / "three.yaml"
    other.write_text(f.config.read_text().replace("partition_sets: 2", "partition_sets: 3"))
    first = f.start("first")
    try:
        await eventually(lambda: held_sets(first) == [0, 1], timeout=120, message="sets held")
        newcomer = AaProcess([*f.args[:2], str(other), *f.args[3:]], tmp_path / "newcomer.log")
        try:
            await eventually(
                lambda: (
                    "give every process of the flow the same exactly_once.partition_sets"
                    in newcomer.output()
                ),
                timeout=120,
                message="the newcomer refused",
            )
        finally:
            newcomer.stop()
        assert held_sets(newcomer) is None
        assert first.proc.poll() is None, "the first process stopped"
    finally:
        first.stop()
