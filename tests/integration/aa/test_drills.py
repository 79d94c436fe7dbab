"""Fault drills: the mirror on the bad day, against real brokers (marker ``drill``).

Two dedicated DCs, SF -> NYC, each broker reachable by `aa run` only through a TCP proxy of
ours (tests/helpers/tcp_proxy.py) that can cut the link and throttle it. A writer streams
records into SF while the fault happens; afterwards the target is read ``read_committed`` and
every source offset is looked up by its ``aa-src`` copy: sent, lost, duplicated. Exactly-once
must give lost = dup = 0; at-least-once lost = 0 and duplicates bounded by what was in flight
(``max_inflight_batches`` x ``max_poll_records`` per restart). Nobody restarts the mirror by
hand (except the SIGKILL drill, which is about a supervisor such as systemd doing it).

Sizes: ``--drill-records`` (3000) and ``--drill-fault-s`` (5 s) by default; the long runs in
docs/reliability.md use larger values. ``AA_DRILL_REPORT=file`` collects the figures.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions

from aa.dev import cluster as devcluster
from tests.conftest import DrillSize, _free_ports
from tests.helpers import drill
from tests.helpers.kafka import create_topic, delete_topic, eventually
from tests.helpers.processes import AaProcess, write_topology
from tests.helpers.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.drill]

PARTITIONS = 3
IN_FLIGHT_BOUND = 4 * 2000  # max_inflight_batches x max_poll_records (the defaults)


@dataclass(frozen=True, slots=True)
class Pair:
    sf: drill.ProxiedDc
    nyc: drill.ProxiedDc


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("aa-drill")
    proxies = [TcpProxy(0).start(), TcpProxy(0).start()]  # before picking the free ports
    ports = _free_ports(6)
    sf = drill.proxied_dc("SF", root, proxies[0], ports[:3])
    nyc = drill.proxied_dc("NYC", root, proxies[1], ports[3:])
    try:
        drill.start_brokers([sf.cluster, nyc.cluster])
        yield Pair(sf, nyc)
    finally:
        devcluster.down(root)
        sf.proxy.close()
        nyc.proxy.close()


@dataclass
class Mirror:
    """`aa run --dc NYC` for the drill's topology; restartable after a SIGKILL."""

    config: Path
    log: Path
    topic: str
    proc: AaProcess | None = None
    watch: drill.MetricsWatch | None = None
    _log_from: int = 0

    def start(self) -> AaProcess:
        args = ["run", "--config", str(self.config), "--dc", "NYC", "--metrics-port", "0"]
        self._log_from = self.log.stat().st_size if self.log.exists() else 0
        self.proc = AaProcess(args, self.log)
        _STARTED.append(self.proc)
        return self.proc

    def metrics(self) -> str:
        """The current /metrics text of the running process."""
        assert self.proc is not None
        urls = re.findall(r'"metrics": "(http://[^"]+)"', self.proc.output())
        return urllib.request.urlopen(urls[-1], timeout=10).read().decode()

    def serving(self) -> bool:
        """True once the process answers /metrics (it has started its flows)."""
        try:
            return bool(self.metrics())
        except (IndexError, OSError):
            return False

    def restarts(self, *, this_process: bool = False) -> int:
        """Flow restarts the log shows (of every process, or of the running one)."""
        assert self.proc is not None
        text = self.proc.output()
        return (text[self._log_from :] if this_process else text).count('"flow_restarting"')

    @property
    def metered(self) -> drill.MetricsWatch:
        """The scrapes of the running process's /metrics (started with the mirror)."""
        if self.watch is None:
            self.watch = drill.MetricsWatch(self.metrics).start()
        return self.watch

    def lag(self, s: drill.Sample) -> float:
        return s.total(drill.LAG, topic=self.topic)

    @staticmethod
    def lag_read_failures(s: drill.Sample) -> float:
        return s.lag_read_failures()


_STARTED: list[AaProcess] = []


@pytest.fixture(autouse=True)
def _no_mirror_outlives_its_drill() -> Iterator[None]:
    """A drill that fails before its `_finish` must not leave its `aa run` behind."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.proc.poll() is None:
            proc.stop()


async def _setup(
    pair: Pair, tmp_path: Path, topic: str, delivery: str, partitions: int = PARTITIONS
) -> Mirror:
    for b in (pair.sf.direct, pair.nyc.direct):
        await create_topic(b, topic, partitions=partitions)
    config = write_topology(
        tmp_path / "topology.yaml",
        {"SF": pair.sf.via_proxy, "NYC": pair.nyc.via_proxy},
        flows=["SF->NYC"],
        topics=[re.escape(topic)],
        delivery=delivery,
        # lag read every second (default 10 s), so a 5 s fault shows in aa_committed_lag_*
        metrics={"lag_interval_s": 1},
    )
    mirror = Mirror(config, tmp_path / "aa-NYC.log", topic)
    mirror.start()
    _ = mirror.metered
    return mirror


async def _fault_shows(
    mirror: Mirror, shows: Callable[[drill.Sample], bool], what: str, min_s: float
) -> drill.Sample:
    """Keep the fault on for ``min_s`` s and until the mirror's metrics show it (``shows``, on a
    scrape taken during the fault); a fault the metrics never show fails the drill."""
    began = time.monotonic()
    await asyncio.sleep(min_s)  # the outage's length
    seen = [s for s in mirror.metered.since(began) if shows(s)]
    if seen:
        return seen[0]
    return await mirror.metered.until(shows, timeout=90, message=what)


async def _metrics_recovered(mirror: Mirror, *, replicated: int | None) -> drill.Sample:
    """After the fault: lag back to 0 (and, for one process, every record counted as copied)
    and the flow up, without anyone restarting the mirror; the restart counter agrees with
    the log."""

    def recovered(s: drill.Sample) -> bool:
        return (
            s.has(drill.LAG, topic=mirror.topic)
            and mirror.lag(s) == 0
            and (replicated is None or s.total(drill.REPLICATED, topic=mirror.topic) >= replicated)
            and s.total(drill.FLOW_UP) == 1
        )

    what = "lag back to 0, every record counted as replicated, the flow up"
    last = await mirror.metered.until(recovered, timeout=120, message=what)
    restarts = mirror.restarts(this_process=True)
    # restarts of the flow inside this process (the supervisor's, not the test's SIGKILLs)
    assert last.total(drill.RESTARTS) == restarts, (last.total(drill.RESTARTS), restarts)
    assert last.total(drill.ERRORS) >= restarts, "a flow restart was not counted as an error"
    return last


async def _finish(
    pair: Pair,
    mirror: Mirror,
    topic: str,
    delivery: str,
    *,
    healed_at: float,
    restarts_allowed: int | None = None,
    **figures: Any,
) -> drill.Tally:
    expected = await drill.source_ids(pair.sf.direct, "SF", topic)
    # 180 s, and more for the long runs (a throttled link needs records x 1 kB / rate)
    result, complete_at = await drill.tally(
        pair.nyc.direct, topic, expected, timeout=180 + len(expected) / 100
    )
    assert mirror.proc is not None
    alive = mirror.proc.proc.poll() is None
    try:
        if alive:
            # the SIGKILL drill's last process did not copy everything: no replicated figure
            one_process = restarts_allowed is None
            last = await _metrics_recovered(
                mirror, replicated=len(expected) if one_process else None
            )
            figures["replicated_metric"] = int(last.total(drill.REPLICATED, topic=topic))
            after = [mirror.lag(s) for s in mirror.metered.since(healed_at)]
            figures["lag_peak_after_fault"] = max(after, default=0.0)
    finally:
        await mirror.metered.stop()
        restarts = mirror.restarts()
        mirror.proc.stop()
    recovery = round(complete_at - healed_at, 1)
    drill.report(
        figures.pop("name"),
        delivery=delivery,
        recovery_s=recovery,
        flow_restarts=restarts,
        tally=result,
        **figures,
    )
    assert alive, "the mirror died instead of recovering: " + mirror.proc.output()[-3000:]
    assert result.lost == 0, f"lost {result.lost}, e.g. {result.missing_sample}"
    if delivery == "exactly-once":
        assert result.duplicated == 0, result
    else:
        bound = IN_FLIGHT_BOUND * (restarts_allowed if restarts_allowed is not None else restarts)
        assert result.duplicated <= bound, (result, restarts)
    return result


async def test_drill_mirror_sigkilled_at_random_moments_at_least_once(
    pair: Pair, tmp_path: Path, unique_name: Callable[[str], str], drill_size: DrillSize
) -> None:
    await _kill_drill(pair, tmp_path, unique_name("kill-alo"), "at-least-once", drill_size)


async def test_drill_mirror_sigkilled_at_random_moments_exactly_once(
    pair: Pair, tmp_path: Path, unique_name: Callable[[str], str], drill_size: DrillSize
) -> None:
    await _kill_drill(pair, tmp_path, unique_name("kill-eos"), "exactly-once", drill_size)


async def _kill_drill(
    pair: Pair, tmp_path: Path, topic: str, delivery: str, size: DrillSize
) -> None:
    rng = random.Random(topic)  # reproducible per topic name, different per run
    kills = max(3, int(size.fault_s * 0.8))
    mirror = await _setup(pair, tmp_path, topic, delivery)
    # the last records are written while no mirror runs (after the last kill), so the last
    # process always starts with a backlog: on a loaded machine the paced writer had finished
    # before the second kill, the third process copied everything, and nothing was left to show
    backlog = max(50, size.records // 10)
    writer = asyncio.create_task(
        drill.write_paced(
            pair.sf.direct,
            topic,
            size.records - backlog,
            seconds=size.fault_s * 2,
            partitions=PARTITIONS,
        )
    )
    for i in range(kills):
        if i > 0:  # the first kill hits start-up; the others a running copy
            await eventually(mirror.serving, timeout=120, message="mirror serving")
        # a random moment: mid-batch, mid-transaction, mid-commit
        await asyncio.sleep(rng.uniform(0.1, 2.0))
        assert mirror.proc is not None
        mirror.proc.kill9()
        if i == kills - 1:
            await writer
            await drill.write_paced(
                pair.sf.direct,
                topic,
                backlog,
                seconds=0.5,
                partitions=PARTITIONS,
                first=size.records - backlog,
            )
        mirror.start()
    healed = time.monotonic()
    # what the restarted process's metrics showed of the backlog: its lag, or (when it copied
    # the backlog between two lag reads) the records it copied
    peak = max((mirror.lag(s) for s in mirror.metered.samples), default=0.0)
    if peak == 0:
        await mirror.metered.until(
            lambda s: mirror.lag(s) > 0 or s.total(drill.REPLICATED, topic=topic) > 0,
            timeout=120,
            message="the backlog left by the kills",
        )
    await _finish(
        pair,
        mirror,
        topic,
        delivery,
        healed_at=healed,
        restarts_allowed=kills + mirror.restarts(),
        name="mirror SIGKILLed at random moments",
        records=size.records,
        faults=f"{kills} kills",
        lag_peak=peak,
    )


@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
@pytest.mark.parametrize("side", ["target", "source"])
async def test_drill_broker_stopped_mid_stream_and_restarted(
    pair: Pair,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    drill_size: DrillSize,
    side: str,
    delivery: str,
) -> None:
    if side == "source" and delivery == "exactly-once":
        pytest.skip("one source bounce (at-least-once) covers the consumer side")  # see docstring
    topic = unique_name(f"bounce-{side}")
    mirror = await _setup(pair, tmp_path, topic, delivery)
    down = pair.nyc.cluster if side == "target" else pair.sf.cluster
    running = asyncio.Event()  # the writers wait while their own cluster (SF) is down
    running.set()
    # half the records before the fault, the other half from the moment the broker is down: on
    # a loaded machine one paced writer had finished, and the mirror caught up, before the
    # broker stopped (lag 0 before and during the fault: nothing could show it)
    first = drill_size.records // 2
    writer = asyncio.create_task(
        drill.write_paced(
            pair.sf.direct,
            topic,
            first,
            seconds=drill_size.fault_s * 1.5,
            partitions=PARTITIONS,
            running=running,
        )
    )
    await eventually(mirror.serving, timeout=120, message="metrics endpoint")
    await asyncio.sleep(drill_size.fault_s / 2)  # mid-stream
    before = await mirror.metered.until(
        lambda s: s.has(drill.LAG, topic=topic), timeout=60, message="lag before the fault"
    )
    if side == "source":
        running.clear()
    log_at_fault = mirror.log.stat().st_size
    await drill.stop_broker(down)
    rest = asyncio.create_task(
        drill.write_paced(
            pair.sf.direct,
            topic,
            drill_size.records - first,
            seconds=drill_size.fault_s * 1.5,
            partitions=PARTITIONS,
            running=running,
            first=first,
        )
    )
    try:
        shown = await _bounce_shows(
            mirror, down, before, side, delivery, drill_size, lambda: writer.done() and rest.done()
        )
        during = mirror.log.read_bytes()[log_at_fault:].decode(errors="replace")
    finally:  # (a failed drill must not leave the module's broker down for the next ones)
        await drill.restart_broker(down)
        running.set()
    # a DC down is one complaint per kind of client error, not ten lines a second each
    # (aiokafka retries every 100 ms and logs every failed connect, fetch and heartbeat)
    repeats = client_log_repeats(during)
    assert max(repeats.values(), default=0) <= 2, repeats.most_common(5)
    healed = time.monotonic()
    await asyncio.gather(writer, rest)
    await _finish(
        pair,
        mirror,
        topic,
        delivery,
        healed_at=healed,
        name=f"{side} broker stopped and restarted",
        records=drill_size.records,
        faults=f"{drill_size.fault_s:.0f} s down",
        lag_before=mirror.lag(before),
        lag_during=mirror.lag(shown),
        lag_read_failures=mirror.lag_read_failures(shown),
    )


async def _bounce_shows(
    mirror: Mirror,
    down: devcluster.DevCluster,
    before: drill.Sample,
    side: str,
    delivery: str,
    drill_size: DrillSize,
    written: Callable[[], bool],
) -> drill.Sample:
    """The broker ``down`` is stopped: keep it down until the metrics show it (``written``:
    whether the writer has written every record).

    Target down, at-least-once: the source group's commits stop, the lag grows. Target down,
    exactly-once: the copied position is stored on the target; the lag read either answers
    from the last offsets it read (an overestimate that grows) or fails (counted). Source
    down: nothing can be read (and nothing is written): the failed reads are counted."""
    grow = max(50, drill_size.records // 30)
    failed = mirror.lag_read_failures(before)

    def grew(s: drill.Sample) -> bool:
        # or, once the writer is done (a loaded machine: the mirror's start and the broker's
        # stop took the writer's time), the lag stays where it was instead of falling to 0
        held = written() and mirror.lag(s) >= mirror.lag(before) > 0
        return held or mirror.lag(s) >= mirror.lag(before) + grow

    def read_failed(s: drill.Sample) -> bool:
        return mirror.lag_read_failures(s) > failed

    if side == "target" and delivery == "at-least-once":
        shows, what = grew, f"lag growing by {grow}+ records"
    elif side == "target":
        shows, what = (lambda s: grew(s) or read_failed(s)), f"lag +{grow} or failed lag reads"
    else:
        shows, what = read_failed, "failed lag reads"
    what = f"{what} while {down.name} is down"
    return await _fault_shows(mirror, shows, what, drill_size.fault_s)


async def test_drill_network_partition_between_dcs(
    pair: Pair, tmp_path: Path, unique_name: Callable[[str], str], drill_size: DrillSize
) -> None:
    topic = unique_name("partition")
    mirror = await _setup(pair, tmp_path, topic, "at-least-once")
    writer = asyncio.create_task(
        drill.write_paced(
            pair.sf.direct,
            topic,
            drill_size.records,
            seconds=drill_size.fault_s * 2,
            partitions=PARTITIONS,
        )
    )
    await eventually(mirror.serving, timeout=120, message="metrics endpoint")
    await asyncio.sleep(drill_size.fault_s / 2)
    before = await mirror.metered.until(
        lambda s: s.has(drill.LAG, topic=topic), timeout=60, message="lag before the fault"
    )
    failed = mirror.lag_read_failures(before)
    pair.sf.proxy.cut()  # the mirror (in NYC) cannot reach SF; SF's writers go on
    try:
        # SF's end offsets are out of reach: the lag gauge cannot move; the reads that get no
        # answer are counted (bounded by the lag interval + 5 s, not the 40 s request timeout)
        shown = await _fault_shows(
            mirror,
            lambda s: mirror.lag_read_failures(s) > failed,
            "failed lag reads while SF is cut off",
            drill_size.fault_s,
        )
    finally:
        pair.sf.proxy.heal()
    healed = time.monotonic()
    await writer
    await _finish(
        pair,
        mirror,
        topic,
        "at-least-once",
        healed_at=healed,
        name="network partition (source cut off)",
        records=drill_size.records,
        faults=f"{drill_size.fault_s:.0f} s cut",
        lag_before=mirror.lag(before),
        lag_read_failures=mirror.lag_read_failures(shown),
    )


async def test_drill_slow_target_backpressure_bounds_memory(
    pair: Pair, tmp_path: Path, unique_name: Callable[[str], str], drill_size: DrillSize
) -> None:
    topic = unique_name("slow")
    value_size = 1000
    mirror = await _setup(pair, tmp_path, topic, "at-least-once")
    # the target link carries ~1/4 of what the writer produces: the mirror must hold back
    rate = drill_size.records * value_size / (drill_size.fault_s * 4)
    pair.nyc.proxy.throttle(rate)
    peak = 0.0
    try:
        writer = asyncio.create_task(
            drill.write_paced(
                pair.sf.direct,
                topic,
                drill_size.records,
                seconds=drill_size.fault_s,
                partitions=PARTITIONS,
                value_size=value_size,
            )
        )
        assert mirror.proc is not None
        while not writer.done():
            peak = max(peak, drill.rss_mb(mirror.proc.proc.pid))
            await asyncio.sleep(0.2)  # sampling memory, not synchronising
        await writer
        for _ in range(int(drill_size.fault_s * 5)):  # keep sampling while it catches up
            peak = max(peak, drill.rss_mb(mirror.proc.proc.pid))
            await asyncio.sleep(0.2)
        # the link holds the copy back: the lag shows a backlog of a quarter of the records
        backlog = drill_size.records // 4
        lag_peak = max((mirror.lag(s) for s in mirror.metered.samples), default=0.0)
        if lag_peak < backlog:
            shown = await mirror.metered.until(
                lambda s: mirror.lag(s) >= backlog,
                timeout=60,
                message=f"a lag of {backlog}+ records behind the throttled link",
            )
            lag_peak = mirror.lag(shown)
    finally:
        pair.nyc.proxy.throttle(None)
    healed = time.monotonic()
    await _finish(
        pair,
        mirror,
        topic,
        "at-least-once",
        healed_at=healed,
        name="slow target (throttled link)",
        records=drill_size.records,
        faults=f"{rate / 1000:.0f} kB/s link",
        peak_rss_mb=round(peak),
        lag_peak=lag_peak,
    )
    # in-flight is bounded by max_inflight_batches x max_poll_records (8k records, ~8 MB of
    # values here) whatever the backlog: the process stays far below what buffering it would take
    assert 0 < peak < 300, f"peak RSS {peak:.0f} MB"


async def test_drill_partitions_added_while_running(
    pair: Pair, tmp_path: Path, unique_name: Callable[[str], str], drill_size: DrillSize
) -> None:
    topic = unique_name("grow")
    mirror = await _setup(pair, tmp_path, topic, "at-least-once", partitions=2)
    half = drill_size.records // 2
    await drill.write_paced(pair.sf.direct, topic, half, seconds=1, partitions=2, tag="a")
    admin = AIOKafkaAdminClient(bootstrap_servers=pair.sf.direct)
    await admin.start()
    try:
        await admin.create_partitions({topic: NewPartitions(total_count=4)})
    finally:
        await admin.close()
    healed = time.monotonic()
    await drill.write_paced(pair.sf.direct, topic, half, seconds=1, partitions=4, tag="b")
    await mirror.metered.until(
        lambda s: s.label_values(drill.LAG, "partition", topic=topic) == {"0", "1", "2", "3"},
        timeout=90,
        message="lag of the 2 partitions added",
    )
    await _finish(
        pair,
        mirror,
        topic,
        "at-least-once",
        healed_at=healed,
        name="partitions added while running (2 -> 4)",
        records=2 * half,
        faults="+2 partitions",
    )


async def test_drill_source_topic_deleted_and_recreated(
    pair: Pair, tmp_path: Path, unique_name: Callable[[str], str], drill_size: DrillSize
) -> None:
    topic = unique_name("recreate")
    mirror = await _setup(pair, tmp_path, topic, "at-least-once")
    half = drill_size.records // 2
    await drill.write_paced(pair.sf.direct, topic, half, seconds=1, partitions=PARTITIONS, tag="a")
    first = {f"a:{i}" for i in range(half)}
    await drill.tally(
        pair.nyc.direct, topic, first, key=_value_tag, settle=0, timeout=180 + half / 100
    )
    await delete_topic(pair.sf.direct, topic)

    async def recreated() -> bool:
        try:
            await create_topic(pair.sf.direct, topic, partitions=PARTITIONS)
        except Exception:
            return False
        return True

    await eventually(recreated, timeout=60, message="topic recreated")
    healed = time.monotonic()
    await drill.write_paced(pair.sf.direct, topic, half, seconds=1, partitions=PARTITIONS, tag="b")
    # the new incarnation's offsets start at 0 again: count by value, not aa-src
    expected = first | {f"b:{i}" for i in range(half)}
    result, complete_at = await drill.tally(
        pair.nyc.direct, topic, expected, key=_value_tag, timeout=180 + len(expected) / 100
    )
    assert mirror.proc is not None
    alive = mirror.proc.proc.poll() is None
    try:
        if alive:
            await _metrics_recovered(mirror, replicated=len(expected))
    finally:
        await mirror.metered.stop()
        mirror.proc.stop()
    drill.report(
        "source topic deleted and recreated",
        delivery="at-least-once",
        recovery_s=round(complete_at - healed, 1),
        flow_restarts=mirror.restarts(),
        tally=result,
        records=2 * half,
        faults="delete + recreate",
    )
    assert alive
    assert result.lost == 0, f"lost {result.lost}, e.g. {result.missing_sample}"


def client_log_repeats(text: str) -> Counter[str]:
    """aiokafka's log lines in a JSON-lines log, counted per message with digits masked (the
    same complaint about another node, port or partition counts as the same message)."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(doc, dict) and str(doc.get("logger", "")).startswith("aiokafka"):
            out[re.sub(r"\d+", "#", str(doc.get("event", "")))] += 1
    return out


def _value_tag(record: Any) -> str:
    return b":".join(record.value.split(b":")[:2]).decode()
