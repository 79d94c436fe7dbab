"""The hybrid logical clock (``conflict.hlc``)."""

from __future__ import annotations

import pytest

from conflict import (
    HLC,
    Clock,
    ClockSkewError,
)

pytestmark = pytest.mark.unit


def test_hlc_is_monotonic_and_survives_restart() -> None:
    t = [1000]
    clock = Clock("SF", now=lambda: t[0])
    a, b = clock.tick(), clock.tick()
    t[0] = 900  # the wall clock steps back
    c = clock.tick()
    assert a < b < c
    restarted = Clock("SF", last=c, now=lambda: 800)
    assert restarted.tick() > c
    assert clock.observe(HLC(5000, 7, "NYC")) > HLC(5000, 7, "NYC")


def test_hlc_far_in_the_future_is_refused() -> None:
    clock = Clock("SF", now=lambda: 1_000_000, max_drift_ms=60_000)
    with pytest.raises(ClockSkewError, match="ahead of SF's clock"):
        clock.observe(HLC(1_000_000 + 3_600_000, 0, "NYC"))
