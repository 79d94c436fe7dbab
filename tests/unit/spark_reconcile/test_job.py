"""The job's entry point (``spark_reconcile.job``, ``aa reconcile``): what its help says, and the
errors that stop it before it contacts any DC."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aa.cli.main import main as aa_main

pytestmark = pytest.mark.unit


ROOT = Path(__file__).resolve().parents[3]


def test_reconcile_help_says_what_the_job_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        aa_main(["reconcile", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for said in (
        "reads a time window of every DC",
        "missing",
        "in flight",
        "expired",
        "duplicated",
        "looped",
        "divergent",
        "malformed",
        "--repair",
        "exit code",
        "0 within thresholds, 1 thresholds crossed, 2 error or a DC not checked",
        "docs/reconcile.md",
    ):
        assert said.lower() in out.lower(), said
    assert "import" not in out  # no design notes about the code


def test_reconcile_without_pyspark_says_how_to_install_it(tmp_path: Path) -> None:
    """PySpark is an extra (``aa[spark]``): without it, ``aa reconcile`` stops at once with the
    install command, before it probes any DC."""
    config = tmp_path / "topology.yaml"
    config.write_text(
        "datacenters: {SF: '127.0.0.1:1', NYC: '127.0.0.1:2'}\nflows: full-mesh\n"
        "topics: ['users']\n"
    )
    hide_pyspark = (
        "import sys; sys.modules['pyspark'] = None; from aa.cli.main import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    args = ["reconcile", "--config", str(config), "--since", "1h", "--out", str(tmp_path / "o")]
    done = subprocess.run(
        [sys.executable, "-c", hide_pyspark, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2, done.stderr
    assert "PySpark is not installed: pip install 'aa[spark]'" in done.stderr
    assert "unreachable" not in done.stderr


def test_reconcile_options_load_without_pyspark() -> None:
    """``aa --help`` and ``aa reconcile --help`` read the job's options only: no PySpark."""
    code = (
        "import sys; import aa.cli.main, spark_reconcile.options; "
        "sys.exit(1 if 'pyspark' in sys.modules else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


def test_unknown_resolver_exits_2_before_contacting_any_dc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aa.cli.main import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("datacenters:\n  SF: {bootstrap: '127.0.0.1:1'}\n  NYC: {bootstrap: 'b:1'}\n")
    args = ["reconcile", "--config", str(cfg), "--since", "1h", "--events", "users=nope"]
    assert main(args) == 2
    assert "--events users=nope: unknown resolver; use one of" in capsys.readouterr().err


def test_first_run_needs_since(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aa.cli.main import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("datacenters:\n  SF: {bootstrap: '127.0.0.1:1'}\n  NYC: {bootstrap: 'b:1'}\n")
    assert main(["reconcile", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "--since is required on the first run" in capsys.readouterr().err
