"""`aa reconcile` prints one human line on stdout (issue 35, item 8): off a terminal it printed
nothing there (its progress is logged on stderr). The job itself is replaced here: the line is
made from the summary.json the run wrote, and only when this run wrote it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import orjson
import pytest

from aa.cli.main import main

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]


def _job(out: Path, code: int, crossed: list[str]) -> object:
    def run_cli(args: argparse.Namespace) -> int:
        summary = {
            "window": {"since": "2026-11-26T10:00:00Z", "until": "2026-11-27T10:00:00Z"},
            "counts": {"missing": 3, "duplicated": 0, "looped": 0, "divergent": 0, "malformed": 0},
            "thresholds_crossed": crossed,
        }
        (out / "summary.json").write_bytes(orjson.dumps(summary))
        return code

    return run_cli


def test_reconcile_prints_one_summary_line_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import spark_reconcile.job

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(spark_reconcile.job, "run_cli", _job(out, 1, ["missing: 3 > 0"]))
    config = str(ROOT / "examples" / "topology.yaml")
    assert main(["reconcile", "--config", config, "--since", "24h", "--out", str(out)]) == 1
    assert capsys.readouterr().out == (
        "reconcile 2026-11-26T10:00:00Z .. 2026-11-27T10:00:00Z: missing 3, duplicated 0, "
        "looped 0, divergent 0, malformed 0; exit 1 (thresholds crossed: missing: 3 > 0); "
        f"report {out / 'report.html'}\n"
    )


def test_no_line_from_an_older_run_when_this_one_wrote_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import spark_reconcile.job

    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_bytes(b"{}")
    old = 1_000_000_000

    os.utime(out / "summary.json", (old, old))
    monkeypatch.setattr(spark_reconcile.job, "run_cli", lambda args: 2)
    config = str(ROOT / "examples" / "topology.yaml")
    assert main(["reconcile", "--config", config, "--since", "24h", "--out", str(out)]) == 2
    assert capsys.readouterr().out == ""
