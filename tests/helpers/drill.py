"""Fault-drill harness: brokers behind proxies, a paced writer, and the tally of what arrived.

Every drill counts by ``aa-src`` (the origin ``dc/topic/partition/offset`` the mirror stamps on
each copy) on a ``read_committed`` consumer of the target: records sent (every offset of the
source topic), lost (an offset with no copy), duplicated (extra copies).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from aa.dev import cluster as devcluster
from tests.conftest import launch_local_clusters
from tests.helpers.tcp_proxy import TcpProxy

REPORT_ENV = "AA_DRILL_REPORT"
"""When set, every drill appends its figures (one JSON line) to this file."""


@dataclass(slots=True)
class ProxiedDc:
    """A dedicated broker whose PROXIED listener is only reached through ``proxy``."""

    cluster: devcluster.DevCluster
    proxy: TcpProxy

    @property
    def direct(self) -> str:
        """The broker's own listener: what the test's writer and reader use."""
        return self.cluster.bootstrap

    @property
    def via_proxy(self) -> str:
        """What `aa run` is given: every connection goes through the proxy."""
        return self.proxy.address


def proxied_dc(name: str, root: Path, proxy: TcpProxy, ports: list[int]) -> ProxiedDc:
    """A broker spec with listeners PLAINTEXT (direct) and PROXIED, which advertises the port
    of ``proxy`` (started first, so that its port is not one of ``ports``), pointed at it.
    ``ports``: plaintext, controller, proxied."""
    plain, controller, proxied = ports
    proxy.upstream_port = proxied
    extra = (
        (
            "listeners",
            f"PLAINTEXT://127.0.0.1:{plain},PROXIED://127.0.0.1:{proxied},"
            f"CONTROLLER://127.0.0.1:{controller}",
        ),
        ("advertised.listeners", f"PLAINTEXT://127.0.0.1:{plain},{'PROXIED'}://{proxy.address}"),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT,CONTROLLER:PLAINTEXT",
        ),
    )
    spec = devcluster.DevCluster(name, plain, controller, root / name, extra_properties=extra)
    return ProxiedDc(spec, proxy)


def start_brokers(clusters: list[devcluster.DevCluster]) -> None:
    """Start (or restart, keeping their data) ``clusters``; returns once each answers."""
    launch_local_clusters(clusters)


async def restart_broker(c: devcluster.DevCluster) -> None:
    await asyncio.to_thread(start_brokers, [c])


async def stop_broker(c: devcluster.DevCluster) -> None:
    await asyncio.to_thread(devcluster.stop, c)


# -- writing ---------------------------------------------------------------------------------


async def write_paced(
    bootstrap: str,
    topic: str,
    n: int,
    *,
    seconds: float,
    partitions: int,
    value_size: int = 100,
    tag: str = "v",
    running: asyncio.Event | None = None,
    first: int = 0,
) -> int:
    """Write ``n`` records spread over about ``seconds`` (a steady stream the faults hit).

    While ``running`` is clear the writer waits (its own cluster is down in a source drill).
    Values are ``tag:i`` padded to ``value_size``, ``i`` from ``first`` (a second writer goes
    on where a first one stopped); returns how many were acknowledged.
    """
    if running is not None:  # a writer started while its cluster is down starts once it is up
        await running.wait()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    now_ms = int(time.time() * 1000)
    chunk = max(1, n // max(1, int(seconds * 10)))
    sent = 0
    try:
        began = time.monotonic()
        while sent < n:
            if running is not None:
                await running.wait()
            futures = []
            for i in range(first + sent, first + min(n, sent + chunk)):
                value = f"{tag}:{i}:".encode().ljust(value_size, b".")
                futures.append(
                    await producer.send(
                        topic,
                        key=f"k{i}".encode(),
                        value=value,
                        partition=i % partitions,
                        timestamp_ms=now_ms + i,
                    )
                )
            await asyncio.gather(*futures)
            sent += len(futures)
            # pacing the load generator, not synchronising: spread n over `seconds`
            ahead = began + seconds * sent / n - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)
    finally:
        await producer.stop()
    return sent


# -- counting --------------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    sent: int
    copies: int
    lost: int
    duplicated: int
    missing_sample: list[str] = field(default_factory=list)


async def source_ids(bootstrap: str, dc: str, topic: str) -> set[str]:
    """``dc/topic/partition/offset`` of every record now in the source topic."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        # a consumer without a subscription asks metadata of no topic: name ours
        parts = await consumer._client._wait_on_metadata(topic)
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        begin = await consumer.beginning_offsets(tps)
        end = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return {f"{dc}/{topic}/{tp.partition}/{o}" for tp in tps for o in range(begin[tp], end[tp])}


def by_src(record: Any) -> Hashable:
    src = dict(record.headers).get("aa-src")
    return src.decode() if src is not None else None


async def tally(
    bootstrap: str,
    topic: str,
    expected: set[Any],
    *,
    key: Callable[[Any], Hashable] = by_src,
    timeout: float = 180.0,
    settle: float = 2.0,
) -> tuple[Tally, float]:
    """Read the target ``read_committed`` until every ``expected`` key arrived (or the deadline),
    then ``settle`` s more to see late duplicates. Returns the tally and when the last expected
    key arrived (monotonic)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    counts: Counter[Hashable] = Counter()
    complete_at = float("nan")
    try:
        deadline = time.monotonic() + timeout
        assigned: set[int] = set()
        settle_until: float | None = None
        # a consumer without a subscription asks metadata of no topic: name ours
        consumer._client.add_topic(topic)
        refreshed = 0.0
        while True:
            if time.monotonic() - refreshed > 1.0:  # see the topic appear and grow
                await consumer._client.force_metadata_update()
                refreshed = time.monotonic()
            parts = consumer.partitions_for_topic(topic) or set()
            if parts - assigned:  # the mirror may create the topic or add partitions late
                assigned = set(parts)
                consumer.assign([TopicPartition(topic, p) for p in sorted(assigned)])
                await consumer.seek_to_beginning()
                counts.clear()
            batch = await consumer.getmany(timeout_ms=300)
            for records in batch.values():
                counts.update(key(r) for r in records)
            now = time.monotonic()
            if settle_until is None and expected <= counts.keys():
                complete_at = now
                settle_until = now + settle
            if settle_until is not None and now >= settle_until:
                break
            if now > deadline:
                break
    finally:
        await consumer.stop()
    missing = sorted(str(k) for k in expected - counts.keys())
    result = Tally(
        sent=len(expected),
        copies=sum(counts[k] for k in expected),
        lost=len(missing),
        duplicated=sum(max(0, counts[k] - 1) for k in expected),
        missing_sample=missing[:5],
    )
    return result, complete_at


# -- observing the mirror --------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def report(drill: str, **figures: Any) -> None:
    """Append one drill's figures to ``$AA_DRILL_REPORT`` (for docs/reliability.md)."""
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    row = {"drill": drill, "kafka": devcluster.kafka_version(), **figures}
    for k, v in list(row.items()):
        if isinstance(v, Tally):
            row.pop(k)
            row.update({f"{key}": val for key, val in asdict(v).items() if key != "missing_sample"})
    with open(path, "ab") as f:
        f.write(orjson.dumps(row) + b"\n")


# -- reading the mirror's own metrics ---------------------------------------------------------

# the series of `aa run`'s /metrics that the drills read (names pinned here, so a rename fails them)
LAG, REPLICATED, ERRORS, RESTARTS, TASK_FAILURES, FLOW_UP = (
    "aa_committed_lag_records",
    "aa_records_replicated_total",
    "aa_errors_total",
    "aa_flow_restarts_total",
    "aa_background_task_failures_total",
    "aa_flow_up",
)

_SERIES = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class Sample:
    """One scrape of a mirror's ``/metrics``: ``at`` (monotonic) and every series in it."""

    at: float
    series: tuple[tuple[str, dict[str, str], float], ...]

    @classmethod
    def parse(cls, at: float, text: str) -> Sample:
        rows = []
        for line in text.splitlines():
            m = _SERIES.match(line)
            if m is None or line.startswith("#"):
                continue
            labels = dict(_LABEL.findall(m.group(2) or ""))
            rows.append((m.group(1), labels, float(m.group(3))))
        return cls(at, tuple(rows))

    def total(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` whose labels include ``labels``."""
        return sum(
            v
            for n, have, v in self.series
            if n == name and all(have.get(k) == want for k, want in labels.items())
        )

    def lag_read_failures(self) -> float:
        """Failed committed-lag reads, summed over the flows (one ``lag:<flow>`` task each)."""
        return sum(
            v
            for n, have, v in self.series
            if n == TASK_FAILURES and have.get("task", "").startswith("lag:")
        )

    def has(self, name: str, **labels: str) -> bool:
        return any(
            n == name and all(have.get(k) == want for k, want in labels.items())
            for n, have, _ in self.series
        )

    def label_values(self, name: str, label: str, **labels: str) -> set[str]:
        return {
            have[label]
            for n, have, _ in self.series
            if n == name
            and label in have
            and all(have.get(k) == want for k, want in labels.items())
        }


class MetricsWatch:
    """Scrapes a mirror's ``/metrics`` every ``every`` s in the background (whichever process
    ``scrape`` reaches: after a restart, the new one) and keeps the series, so a drill can assert
    what the metrics showed during its fault and that they came back."""

    def __init__(self, scrape: Callable[[], str], every: float = 0.5) -> None:
        self._scrape = scrape
        self._every = every
        self.samples: list[Sample] = []
        self._new = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> MetricsWatch:
        self._task = asyncio.create_task(self._run())
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                text = await asyncio.to_thread(self._scrape)
            except (OSError, IndexError, ValueError):
                pass  # the process is (re)starting or gone: no sample this time
            else:
                self.samples.append(Sample.parse(time.monotonic(), text))
                self._new.set()
            await asyncio.sleep(self._every)  # the scrape interval, not a synchronisation

    @property
    def last(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    def since(self, t: float) -> list[Sample]:
        return [s for s in self.samples if s.at >= t]

    async def until(
        self, condition: Callable[[Sample], bool], *, timeout: float, message: str
    ) -> Sample:
        """The first sample scraped from now on for which ``condition`` holds; fails with
        ``message`` and the last sample's key figures after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        seen = len(self.samples)
        while True:
            for s in self.samples[seen:]:
                if condition(s):
                    return s
            seen = len(self.samples)
            left = deadline - time.monotonic()
            if left <= 0:
                last = self.last
                shown = (
                    {n: last.total(n) for n in (LAG, REPLICATED, ERRORS, RESTARTS, TASK_FAILURES)}
                    if last is not None
                    else "no sample"
                )
                raise AssertionError(f"metrics never showed: {message} (last: {shown})")
            self._new.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new.wait(), left)


def scrape_from_log(log: Path) -> str:
    """The /metrics text of the newest `aa run` that logged to ``log`` (its ``mirror_started``
    line names the URL; the port is picked at start). Raises OSError/IndexError before that."""
    urls = re.findall(r'"metrics": "(http://[^"]+)"', log.read_text(errors="replace"))
    with urllib.request.urlopen(urls[-1], timeout=10) as answer:
        return str(answer.read().decode())
