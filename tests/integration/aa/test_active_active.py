"""Three DCs, every flow running as `aa run --dc X` processes: each DC's applications write
concurrently, and after quiescence every DC holds every event exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.processes import aa_processes, write_topology

pytestmark = pytest.mark.integration

# Recent CreateTimes: the mirror keeps timestamps, and a broker's time-based retention deletes
# segments of records older than retention.ms (7 days here) within minutes of their copy.
T0 = int(time.time() * 1000) - 60_000

DCS = ("SF", "NYC", "LON")
PARTITIONS = 3


def _events(dc: str, n: int) -> list[Rec]:
    return [
        Rec(
            f"user-{i % 200}".encode(),
            f"{dc}:{i}".encode(),
            [("app-trace", f"{dc}-{i}".encode())],
            partition=i % PARTITIONS,
            timestamp_ms=T0 + i,
        )
        for i in range(n)
    ]


def _identity(dc: str, rec: Any) -> tuple[str, str]:
    """(origin DC, origin src) of a record read in ``dc``; local records are their own src."""
    h = dict(rec.headers)
    if "aa-src" in h:
        return h["aa-origin"].decode(), h["aa-src"].decode()
    return dc, f"{dc}/{rec.topic}/{rec.partition}/{rec.offset}"


def _check_dc(dc: str, records: list[Any], per_dc: int, restarts: int) -> None:
    """Every event exactly once when no flow restarted; a flow that restarted after a broker
    error (at-least-once) may re-copy at most what it had in flight: max_in_flight (4) x
    max_poll_records (2000) per restart."""
    ids = Counter(_identity(dc, r)[1] for r in records)
    assert len(ids) == per_dc * len(DCS), f"{dc}: {len(ids)} distinct events"
    dupes = [k for k, n in ids.items() if n > 1]
    if restarts:
        assert sum(ids.values()) - len(ids) <= restarts * 4 * 2000
        dupes = []
    detail = [
        (r.partition, r.offset, dict(r.headers).get("aa-path"))
        for r in records
        if _identity(dc, r)[1] in dupes[:2]
    ]
    assert not dupes, f"{dc}: {len(dupes)} duplicated, e.g. {detail}"
    by_origin_partition: dict[tuple[str, int], list[int]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        h = dict(r.headers)
        path = h.get("aa-path", dc.encode()).decode().split(",")
        assert len(path) == len(set(path)), f"looped: {path}"
        assert len(path) <= 2  # full mesh: one hop from the origin
        origin, src = _identity(dc, r)
        value = r.value.decode()
        assert value.startswith(f"{origin}:")
        i = int(value.split(":")[1])
        assert r.timestamp == T0 + i
        assert r.key == f"user-{i % 200}".encode()
        assert h["app-trace"] == f"{origin}-{i}".encode()
        assert next(iter(r.headers)) == ("app-trace", f"{origin}-{i}".encode())
        _, _topic, part, offset = src.split("/")
        assert r.partition == int(part)
        by_origin_partition[(origin, int(part))].append(int(offset))
    for key, offsets in by_origin_partition.items():
        first_copies = list(dict.fromkeys(offsets))  # a re-copy after a restart comes later
        assert first_copies == sorted(first_copies), f"{dc}: order broken for {key}"


_WORTH_SHOWING = ("warning", "error", "task_dump")


@contextlib.contextmanager
def _explained_by(procs: list[Any]) -> Iterator[None]:
    """On a failed check, stop the processes (a stuck flow dumps its tasks at the shutdown
    deadline) and add their warnings and errors to the failure."""
    try:
        yield
    except AssertionError as exc:
        for p in procs:
            p.stop()
        lines = [
            f"{p.log_path.name}: {line[:400]}"
            for p in procs
            for line in p.output().splitlines()
            if any(w in line for w in _WORTH_SHOWING)
        ]
        raise AssertionError(f"{exc}\n" + "\n".join(lines[-80:])) from exc


async def _mesh(
    tmp_path: Path,
    dc_clusters: dict[str, DcCluster],
    topics: dict[str, str],
    loop_prevention: object,
    per_dc: int,
    read_topics: Callable[[str], list[str]],
) -> None:
    clusters = {dc: dc_clusters[dc].bootstrap for dc in DCS}
    include = sorted(set(topics.values()))
    config = write_topology(
        tmp_path / "topology.yaml",
        clusters,
        flows="full-mesh",
        topics={"include": [*include, *[f"{dc}\\.{t}" for dc in DCS for t in include]]},
        loop_prevention=loop_prevention,
    )
    for dc in DCS:
        await create_topic(clusters[dc], topics[dc], partitions=PARTITIONS)
    runs = [
        (
            ["run", "--config", str(config), "--dc", dc, "--metrics-port", "0"],
            tmp_path / f"aa-{dc}.log",
        )
        for dc in DCS
    ]
    with aa_processes(*runs) as procs, _explained_by(procs):
        await asyncio.gather(
            *(produce(clusters[dc], topics[dc], _events(dc, per_dc)) for dc in DCS)
        )
        for dc in DCS:
            # every event arrived, then 2 s of quiescence to see any extra copy
            final: list[Any] = []
            topics_here = read_topics(dc)
            expect = per_dc * len(DCS) // len(topics_here)
            for t in topics_here:
                # count distinct events: a restart's re-copies must not end the wait early
                final += await consume_all(
                    clusters[dc],
                    t,
                    count=expect,
                    timeout=120,
                    settle=2.0,
                    distinct=lambda r, dc=dc: _identity(dc, r)[1],
                )
            restarts = sum(p.output().count('"flow_restarting"') for p in procs)
            _check_dc(dc, final, per_dc, restarts)
    for p in procs:
        assert p.proc.returncode == 0, p.output()[-3000:]


async def test_full_mesh_headers_mode(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("users")
    await _mesh(
        tmp_path, dc_clusters, dict.fromkeys(DCS, topic), "headers", 10_000, lambda dc: [topic]
    )


async def test_full_mesh_prefix_mode_rename(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("users")
    await _mesh(
        tmp_path,
        dc_clusters,
        dict.fromkeys(DCS, topic),
        {"mode": "prefix", "style": "rename"},
        10_000,
        lambda dc: [topic, *[f"{o}.{topic}" for o in DCS if o != dc]],
    )
