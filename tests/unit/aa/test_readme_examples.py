"""The README's commands that need no broker work as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aa.cli.main import main

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def test_readme_names_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("config", ["examples/topology.yaml", "examples/mm2.properties"])
def test_readme_plan_example_works_offline(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert re.search(
        rf"aa plan\s+--config {re.escape('examples/topology.yaml')}",
        (ROOT / "README.md").read_text(),
    )
    assert main(["plan", "--config", str(ROOT / config), "--offline"]) == 0
    out = capsys.readouterr().out
    assert "SF->NYC" in out
