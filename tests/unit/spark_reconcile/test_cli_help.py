"""``aa reconcile --help`` tells the user what the job does, not how the code is laid out."""

from __future__ import annotations

import pytest

from aa.cli.main import main as aa_main

pytestmark = [pytest.mark.unit]


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
