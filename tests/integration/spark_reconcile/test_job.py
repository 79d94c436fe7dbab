"""The job on real clusters: a clean full mesh gives zero findings; injected faults are each
found and nothing else is; --repair makes the next run find nothing missing and is idempotent;
bad input (empty window, no provenance, malformed events) never crashes it (an unreachable DC:
test_job_edges.py).

The copies are produced by the test with the headers the mirror adds (no mirror runs)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from spark_reconcile.stages.read import records_dir
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.reconcile import Row, copy_of, mesh
from tests.helpers.reconcile import run_reconcile as _reconcile

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

DCS = ("SF", "NYC", "LON")


def _config(tmp: Path, clusters: dict[str, DcCluster], topics: list[str], name: str) -> Path:
    lines = ["datacenters:"]
    lines += [f'  {dc}: {{bootstrap: "{clusters[dc].bootstrap}"}}' for dc in DCS]
    lines += [
        "flows: full-mesh",
        "topics:",
        "  include: [" + ", ".join(f'"{t}"' for t in topics) + "]",
    ]
    path = tmp / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _write(clusters: dict[str, DcCluster], topic: str, data: dict[str, list[Row]]) -> None:
    async def go() -> None:
        for dc in DCS:
            await create_topic(clusters[dc].bootstrap, topic)
            recs = [Rec(r.key, r.value, r.headers, 0, r.ts) for r in data[dc]]
            if recs:
                await produce(clusters[dc].bootstrap, topic, recs)

    asyncio.run(go())


@pytest.fixture
def t0() -> int:
    return int(time.time() * 1000) - 600_000


def test_clean_mesh_then_faults_then_repair(
    spark: Any,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    tmp_path: Path,
    t0: int,
) -> None:
    since, until = t0 - 1000, t0 + 120_000
    # 1. clean full mesh: zero findings
    orders, users = unique_name("orders"), unique_name("users")
    _write(dc_clusters, orders, mesh(DCS, orders, 5, t0=t0))
    _write(dc_clusters, users, mesh(DCS, users, 6, events=True, t0=t0))
    config = _config(tmp_path, dc_clusters, [orders, users], "clean")
    code, summary = _reconcile(config, tmp_path / "clean", since, until)
    assert code == 0, summary
    assert summary["counts"] == dict.fromkeys(
        ("missing", "duplicated", "looped", "divergent", "malformed"), 0
    )
    assert {r["flow"] for r in summary["delay"]} == {
        f"{a}->{b}" for a in DCS for b in DCS if a != b
    }
    assert (tmp_path / "clean" / "report.html").read_text().count("<svg") == 2

    # 2. faults, each once
    orders, users = unique_name("orders"), unique_name("users")
    o, u = mesh(DCS, orders, 5, t0=t0), mesh(DCS, users, 6, events=True, t0=t0)
    o["NYC"].pop(5)  # NYC's copy of SF's orders record 0 is missing
    o["LON"].append(o["LON"][10])  # a second copy of NYC's record 0 in LON
    loop = copy_of(o["SF"][2], "SF", "NYC", "orders", 2)  # SF's record 2 came back to SF
    o["SF"].append(
        replace(loop, headers=(("app", b"x"), ("aa-origin", b"SF"), ("aa-path", b"SF,NYC,SF"),
                               ("aa-src", f"SF/{orders}/0/2".encode())))
    )  # fmt: skip
    o["NYC"].insert(5, Row(b"local", b"no provenance", (), t0 + 30))  # NYC's own write, uncopied
    winner = next(i for i, r in enumerate(u["SF"]) if b'"by":"LON","i":5}' in (r.value or b""))
    u["SF"][winner] = replace(
        u["SF"][winner],
        value=(u["SF"][winner].value or b"").replace(b'"i":5}', b'"i":9}'),
    )  # SF's copy of k1's winning event (LON's 6th) has another payload, same id
    bad = Row(b"k", b'{"id": "broken', (), t0 + 40)  # a malformed event, copied as bytes
    u["SF"].insert(6, bad)
    for dc in ("NYC", "LON"):
        u[dc].append(copy_of(bad, "SF", dc, users, 6))
    _write(dc_clusters, orders, o)
    _write(dc_clusters, users, u)
    config = _config(tmp_path, dc_clusters, [orders, users], "faults")
    code, summary = _reconcile(config, tmp_path / "faults", since, until)
    assert code == 1
    counts = summary["counts"]
    assert counts == {"missing": 3, "duplicated": 1, "looped": 1, "divergent": 1, "malformed": 3}
    missing = {(r["origin"], r["target"]) for r in summary["samples"]["missing"]}
    assert missing == {("SF", "NYC"), ("NYC", "SF"), ("NYC", "LON")}
    assert [r["dc"] for r in summary["samples"]["duplicated"]] == ["LON"]
    assert [r["path"] for r in summary["samples"]["looped"]] == ["SF,NYC,SF"]
    assert [r["key"] for r in summary["samples"]["divergent"]] == ["k1"]
    without = {
        r["dc"]: r["without_provenance"] for r in summary["records"] if r["ltopic"] == orders
    }
    assert without == {"SF": 5, "NYC": 6, "LON": 5}  # the origin records + NYC's local write
    assert any("missing: 3 > 0" in c for c in summary["thresholds_crossed"])

    # 3. repair: the three missing records are re-published; the next run finds none missing,
    #    and a second repair publishes nothing (idempotent)
    code, summary = _reconcile(config, tmp_path / "repair1", since, until, "--repair")
    assert code == 1  # the findings of this run crossed the thresholds; it repaired them
    assert summary["repair"] == [
        {"target": f"{dc}/{orders}", "published": 1} for dc in ("LON", "NYC", "SF")
    ]
    code, summary = _reconcile(config, tmp_path / "repair2", since, until, "--repair")
    assert summary["counts"] == {
        "missing": 0, "duplicated": 1, "looped": 1, "divergent": 1, "malformed": 3
    }  # fmt: skip
    assert "repair" not in summary  # nothing left to publish: running --repair again adds nothing
    got = asyncio.run(consume_all(dc_clusters["NYC"].bootstrap, orders, count=len(o["NYC"]) + 1))
    assert len(got) == len(o["NYC"]) + 1
    (repaired,) = [r for r in got if r.value == b"SF-v0"]
    assert repaired.key == b"SF-k0"
    assert repaired.timestamp == o["SF"][0].ts
    *headers, (mark, by) = list(repaired.headers)
    assert headers == [
        ("app", b"x"),
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", f"SF/{orders}/0/0".encode()),
    ]
    # the batch is marked as a mirror marks its batches (NYC/<the repair producer's id>), so the
    # flows out of NYC carry the record on as SF's
    assert mark == "aa-batch", mark
    assert re.fullmatch(rb"NYC/\d+", by), by


def test_empty_window_is_clean_and_records_state(
    spark: Any,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    tmp_path: Path,
    t0: int,
) -> None:
    topic = unique_name("orders")
    _write(dc_clusters, topic, mesh(DCS, topic, 2, t0=t0))
    config = _config(tmp_path, dc_clusters, [topic], "empty")
    out = tmp_path / "out"
    code, summary = _reconcile(config, out, t0 + 3_600_000, t0 + 7_200_000)
    assert code == 0
    assert set(summary["counts"].values()) == {0}
    assert summary["records"] == []
    state = orjson.loads((out / "state.json").read_bytes())
    assert state["until_ms"] == t0 + 7_200_000
    assert state["offsets"]["SF"][topic] == {"0": 6}
    # the run's working copy of the records (Parquet) does not outlive the run
    assert not records_dir(out).parent.exists()
