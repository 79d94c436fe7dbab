"""The run's window (``spark_reconcile.window``): times and durations as the options take them."""

from __future__ import annotations

import pytest

from spark_reconcile.errors import ReconcileError
from spark_reconcile.window import Window, parse_duration_ms, parse_time

pytestmark = pytest.mark.unit


NOW = 1_700_000_000_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("now", NOW),
        ("1699999999000", 1_699_999_999_000),
        ("24h", NOW - 86_400_000),
        ("-30m", NOW - 1_800_000),
        ("2023-11-14T22:13:20Z", NOW),
        ("2023-11-14T23:13:20+01:00", NOW),
    ],
)
def test_parse_time(text: str, ms: int) -> None:
    assert parse_time(text, now_ms=NOW) == ms


@pytest.mark.parametrize("text", ["yesterday", "24x", "", "2023-11-14T22:13:20"])
def test_parse_time_rejects_naming_the_option(text: str) -> None:
    with pytest.raises(ReconcileError, match="--until"):
        parse_time(text, now_ms=NOW, option="--until")


def test_window_and_durations() -> None:
    assert parse_duration_ms("10m") == 600_000
    assert parse_duration_ms("250") == 250
    with pytest.raises(ReconcileError, match="--slack"):
        parse_duration_ms("-5m")
    assert Window(1000, 2000, slack_ms=5000).read_from_ms == 0
    with pytest.raises(ReconcileError, match="after --since"):
        Window(2000, 2000)
