"""The job must not cry wolf, and its repair must copy once (issue 14), on real clusters.

One full-mesh run (module fixture, one Spark job) holds every "not what it looks like" case;
each test asserts one scenario of it:

- SF's newest ``orders`` record is still in flight (no copy yet, the mirror not past it) on
  SF->LON, while the SF->NYC mirror has already committed past it (so NYC really lacks it);
- NYC's copy of one of SF's events is undecodable (present, not missing);
- LON's copy of one of SF's events was removed by retention (log start moved past it);
- NYC's copy of LON's winning event of k0 is forged (same id, another payload), while SF lacks
  LON's winning event of k1 (missing): the divergence of k0 and k1 is reported apart.

The chain and the one-DC-down cases each need their own topology (their own run).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from aa.config import load_config
from aa.mirror.build import build_flows, group_id
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import committed, running_flow
from tests.helpers.reconcile import Row, mesh
from tests.helpers.reconcile import run_reconcile as _reconcile

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

DCS = ("SF", "NYC", "LON")


def _config(
    tmp: Path, clusters: dict[str, DcCluster], topics: list[str], name: str, flows: str
) -> Path:
    lines = ["datacenters:"]
    lines += [f'  {dc}: {{bootstrap: "{clusters[dc].bootstrap}"}}' for dc in DCS]
    lines += [f"flows: {flows}", "topics:"]
    lines += ["  include: [" + ", ".join(f'"{t}"' for t in topics) + "]"]
    path = tmp / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def _write(bootstrap: str, topic: str, rows: list[Row]) -> None:
    await create_topic(bootstrap, topic)
    if rows:
        await produce(bootstrap, topic, [Rec(r.key, r.value, r.headers, 0, r.ts) for r in rows])


async def _commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """Commit ``group``'s offset of ``topic``/0, as the mirror does once a copy is acknowledged."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        await consumer.commit({TopicPartition(topic, 0): offset})
    finally:
        await consumer.stop()


async def _delete_before(bootstrap: str, topic: str, offset: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(offset)})
    finally:
        await admin.close()


class MeshRun(NamedTuple):
    """One reconcile of the mesh fixture: its exit code, its summary and the two topics."""

    code: int
    summary: dict[str, Any]
    orders: str
    users: str


def _missing(run: MeshRun) -> set[tuple[str, str, str]]:
    return {(r["origin"], r["target"], r["ltopic"]) for r in run.summary["missing_by_flow"]}


@pytest.fixture(scope="module")
def mesh_run(
    spark: Any, dc_clusters: dict[str, DcCluster], tmp_path_factory: pytest.TempPathFactory
) -> MeshRun:
    tmp = tmp_path_factory.mktemp("edges")
    suffix = uuid.uuid4().hex[:8]
    orders, users = f"orders-edges-{suffix}", f"users-edges-{suffix}"
    now = int(time.time() * 1000)
    t0 = now - 1_200_000  # 20 minutes ago: long past any grace period
    o = mesh(DCS, orders, 2, t0=t0)
    fresh = Row(b"SF-new", b"SF-new-value", (("app", b"x"),), now)
    o["SF"].append(fresh)  # SF offset 6: written just now, copied nowhere yet
    u = mesh(DCS, users, 4, events=True, t0=t0)  # LON's event i wins key k{i}
    # forged: NYC's copy of LON's k0 winner (NYC offset 8) has another payload, same id
    assert b'"by":"LON","i":0}' in (u["NYC"][8].value or b"")
    u["NYC"][8] = replace(
        u["NYC"][8], value=(u["NYC"][8].value or b"").replace(b'"i":0}', b'"i":7}')
    )
    # missing: SF lacks LON's k1 winner (SF offset 9)
    assert b'"by":"LON","i":1}' in (u["SF"][9].value or b"")
    del u["SF"][9]
    # undecodable: NYC's copy of SF's event 2 (NYC offset 6), provenance intact, cut short:
    # it starts like its origin's envelope, so the job's read stage trusts it at first and
    # only the full check of copies unlike their origin refuses it (spark_reconcile.copies)
    assert b'"by":"SF","i":2}' in (u["NYC"][6].value or b"")
    u["NYC"][6] = replace(u["NYC"][6], value=(u["NYC"][6].value or b"")[:-9])
    # expired: LON's copy of SF's event 0 goes first, then retention removes it
    lon = u["LON"]
    first = lon.pop(4)
    assert b'"by":"SF","i":0}' in (first.value or b"")
    u["LON"] = [first, *lon]

    async def setup() -> None:
        for dc in DCS:
            await _write(dc_clusters[dc].bootstrap, orders, o[dc])
            await _write(dc_clusters[dc].bootstrap, users, u[dc])
        await _delete_before(dc_clusters["LON"].bootstrap, users, 1)
        # the SF->NYC mirror committed past the fresh record: NYC really lacks it
        sf = dc_clusters["SF"].bootstrap
        await _commit(sf, "aa.mirror.SF.NYC", orders, 7)

    asyncio.run(setup())
    config = _config(tmp, dc_clusters, [orders, users], "mesh", "full-mesh")
    code, summary = _reconcile(config, tmp / "out", t0 - 1000, now + 60_000)
    assert summary is not None
    return MeshRun(code, summary, orders, users)


def test_record_in_flight_at_window_edge_is_not_missing(mesh_run: MeshRun) -> None:
    missing = _missing(mesh_run)
    assert ("SF", "LON", mesh_run.orders) not in missing  # copy not due yet
    assert ("SF", "NYC", mesh_run.orders) in missing  # the SF->NYC mirror is past it
    in_flight = {
        (r["origin"], r["target"], r["ltopic"]): r["records"] for r in mesh_run.summary["in_flight"]
    }
    assert in_flight == {("SF", "LON", mesh_run.orders): 1}


def test_undecodable_copy_is_reported_undecodable_not_missing(mesh_run: MeshRun) -> None:
    assert ("SF", "NYC", mesh_run.users) not in _missing(mesh_run)
    malformed = mesh_run.summary["samples"]["malformed"]
    assert [(r["dc"], r["ltopic"], r["kind"], r["offset"]) for r in malformed] == [
        ("NYC", mesh_run.users, "event", 6)
    ]
    assert mesh_run.summary["counts"]["malformed"] == 1


def test_expired_record_is_reported_expired_not_missing(mesh_run: MeshRun) -> None:
    assert ("SF", "LON", mesh_run.users) not in _missing(mesh_run)
    expired = {
        (r["origin"], r["target"], r["ltopic"]): r["records"] for r in mesh_run.summary["expired"]
    }
    assert expired == {("SF", "LON", mesh_run.users): 1}


def test_forged_and_missing_caused_divergence_reported_apart(mesh_run: MeshRun) -> None:
    s = mesh_run.summary
    assert _missing(mesh_run) == {("SF", "NYC", mesh_run.orders), ("LON", "SF", mesh_run.users)}
    assert s["counts"] == {
        "missing": 2,
        "duplicated": 0,
        "looped": 0,
        "divergent": 1,
        "malformed": 1,
    }
    assert s["divergent_by_reason"] == {"conflicting copies": 1, "absent events": 1}
    reasons = {r["key"]: r["reason"] for r in s["samples"]["divergent"]}
    assert reasons == {"k0": "conflicting copies", "k1": "absent events"}
    assert mesh_run.code == 1


def test_repair_in_chain_topology_leaves_exactly_one_copy_per_dc(
    spark: Any,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """SF -> NYC -> LON (NYC the hub): SF's record reached neither. Repair writes it to NYC
    only; the NYC->LON mirror carries it on, so LON ends with one copy, not two."""
    topic = unique_name("orders")
    t0 = int(time.time() * 1000) - 1_200_000
    record = Row(b"k", b"v", (("app", b"x"),), t0)
    for dc, rows in (("SF", [record]), ("NYC", []), ("LON", [])):
        asyncio.run(_write(dc_clusters[dc].bootstrap, topic, rows))
    config = _config(tmp_path, dc_clusters, [topic], "chain", "{hub-and-spoke: {hub: NYC}}")
    code, summary = _reconcile(config, tmp_path / "repair", t0 - 1000, t0 + 60_000, "--repair")
    assert code == 1
    assert summary["counts"]["missing"] == 2
    assert summary["repair"] == [{"target": f"NYC/{topic}", "published": 1}]

    topology = load_config(config)
    [(settings, router)] = build_flows(topology, (topology.flow("NYC->LON"),))
    nyc, lon = dc_clusters["NYC"].bootstrap, dc_clusters["LON"].bootstrap

    async def mirror() -> list[Any]:
        async with running_flow(settings, router):
            await eventually(
                lambda: _caught_up(nyc, group_id(topology.flow("NYC->LON")), topic),
                timeout=90,
                message="NYC->LON mirror committed past the repaired record",
            )
        return await consume_all(lon, topic, count=1, settle=1.0)

    got = asyncio.run(mirror())
    assert [(r.key, r.value, dict(r.headers)["aa-path"]) for r in got] == [
        (b"k", b"v", b"SF,NYC,LON")
    ]
    code, summary = _reconcile(config, tmp_path / "after", t0 - 1000, t0 + 60_000)
    assert (code, summary["counts"]["missing"], summary["counts"]["duplicated"]) == (0, 0, 0)


async def _caught_up(bootstrap: str, group: str, topic: str) -> bool:
    return (await committed(bootstrap, group, topic, 1))[0] == 1


def test_one_dc_down_still_reports_the_others(
    spark: Any,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """LON does not answer: SF and NYC are still compared (NYC lacks one of SF's records), LON
    is marked not checked, the run exits 2 and the state file does not advance."""
    topic = unique_name("orders")
    t0 = int(time.time() * 1000) - 1_200_000
    data = mesh(("SF", "NYC"), topic, 2, t0=t0)
    data["NYC"].pop(2)  # NYC's copy of SF's record 0
    for dc in ("SF", "NYC"):
        asyncio.run(_write(dc_clusters[dc].bootstrap, topic, data[dc]))
    clusters = {**dc_clusters, "LON": DcCluster("LON", "127.0.0.1:1")}
    config = _config(tmp_path, clusters, [topic], "down", "full-mesh")
    out = tmp_path / "out"
    code, summary = _reconcile(config, out, t0 - 1000, t0 + 60_000, "--connect-timeout", "3")
    assert code == 2
    assert summary is not None
    assert [r["dc"] for r in summary["not_checked"]] == ["LON"]
    assert "127.0.0.1:1" in summary["not_checked"][0]["reason"]
    assert summary["missing_by_flow"] == [
        {"origin": "SF", "target": "NYC", "ltopic": topic, "count": 1}
    ]
    assert not (out / "state.json").exists()
    err = capsys.readouterr().err
    assert "DC LON at 127.0.0.1:1 is unreachable" in err
    assert "DC SF" not in err
