"""`make demo` runs in the suite at a small size, so the README's first command cannot break
silently again (issue 12: it crashed at step 5 reading a private attribute of `conflict`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import examples.demo
from aa.dev import cluster as devcluster

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def _run_demo(home: Path, *args: str, timeout: float = 480) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AA_DEV_HOME": str(home), "AA_LOG_FORMAT": "console"}
    return subprocess.run(
        [sys.executable, "-m", examples.demo.__name__, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_demo_small_runs_to_the_end_and_converges(tmp_path: Path) -> None:
    home = tmp_path / "dev"
    try:
        done = _run_demo(
            home, "--keys", "20", "--free-ports", "--stop", "--out", str(tmp_path / "out")
        )
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert "Traceback" not in out, out
        assert "converged: yes" in out, out
        assert (tmp_path / "out" / "reconcile" / "summary.json").exists(), out
        assert all(devcluster.pid_of(c) is None for c in devcluster.load(home)), out
    finally:
        devcluster.down(home, wipe=True)
