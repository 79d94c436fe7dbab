"""The benchmark harness still runs: a tiny W1 through aa and MirrorMaker 2 (no timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import DcCluster

pytestmark = pytest.mark.integration  # ~20 s (2k records; MM2 start-up dominates)

REPO = Path(__file__).resolve().parents[3]


def test_bench_w1_tiny_completes_and_writes_json(
    dc_clusters: dict[str, DcCluster], tmp_path: Path
) -> None:
    bootstrap = ",".join(f"{c.name}={c.bootstrap}" for c in dc_clusters.values())
    cmd = [
        sys.executable, "-m", "bench.run", "--only", "W1", "--runners", "mm2,aa",
        "--records", "2000", "--bootstrap", bootstrap, "--out", str(tmp_path / "results"),
        "--work", str(tmp_path / "work"),
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    [result] = (tmp_path / "results").glob("*.json")
    doc = orjson.loads(result.read_bytes())
    assert {"machine", "params", "tuning", "configs", "workloads", "command"} <= doc.keys()
    assert {"cpu_model", "cores", "python", "java", "kafka"} <= doc["machine"].keys()
    assert set(doc["configs"]["W1"]) == {"aa", "mm2"}
    w1 = doc["workloads"]["W1"]
    for runner in ("aa", "mm2"):
        assert {"records_per_s", "copy_s", "cpu_copy_s", "peak_rss_mb"} <= w1[runner].keys()
    assert "aa/mm2 records_per_s" in w1["ratios"]
    assert w1["aa"]["sync_records"] > 0  # aa's offset syncs of the run (issue 29 item 7)
    assert "W1 catch-up" in done.stdout
    assert "aa's offset syncs:" in done.stdout
