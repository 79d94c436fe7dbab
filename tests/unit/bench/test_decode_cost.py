"""``python -m bench.decode_cost`` runs the flow's own Forwarder with fakes of its stages: a
stage that grows a method the fakes lack breaks the benchmark silently (it failed with
'_Placement' object has no attribute 'refuses' while every test passed)."""

from __future__ import annotations

import pytest

from bench import decode_cost

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("pure", [False, True], ids=["batch-path", "record-path"])
def test_decode_cost_runs_the_forwarder_both_ways(
    pure: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if pure:
        monkeypatch.setenv("AA_PURE_PYTHON", "1")
    decode_cost.main(["--local", "--forwarder", "--repeat", "1"])
    assert "per record" in capsys.readouterr().out
