"""bench.wan's pure parts: routes parsed with clear errors, and the delay line's order."""

from __future__ import annotations

import pytest

from bench.wan import DelayLine, Route, parse_route

pytestmark = pytest.mark.unit


def test_route_is_listen_port_equals_target() -> None:
    assert parse_route("9101=127.0.0.1:9001") == Route("127.0.0.1", 9101, "127.0.0.1", 9001)


@pytest.mark.parametrize("raw", ["9101", "x=127.0.0.1:9001", "9101=127.0.0.1", "9101=:9001"])
def test_malformed_route_names_the_flag_and_the_form(raw: str) -> None:
    with pytest.raises(ValueError, match=r"--route .*LISTEN_PORT=TARGET_HOST:TARGET_PORT"):
        parse_route(raw)


def test_chunks_leave_after_the_delay_in_arrival_order() -> None:
    line = DelayLine(delay_s=0.025, capacity=1 << 20)
    assert line.push(10.0, b"a") == pytest.approx(10.025)
    assert line.push(10.001, b"bc") == pytest.approx(10.026)
    assert line.pop_due(10.02) == b""  # nothing is early
    assert line.pop_due(10.025) == b"a"
    assert line.next_release() == pytest.approx(10.026)
    assert line.pop_due(11.0) == b"bc"
    assert line.next_release() is None
    assert line.held == 0


def test_a_clock_step_back_never_reorders() -> None:
    line = DelayLine(delay_s=0.025, capacity=1 << 20)
    first = line.push(10.0, b"a")
    second = line.push(9.0, b"b")  # an earlier arrival time than the chunk ahead of it
    assert second >= first
    assert line.pop_due(second) == b"ab"


def test_the_line_is_full_at_its_capacity_and_frees_as_chunks_leave() -> None:
    line = DelayLine(delay_s=0.0, capacity=4)
    line.push(0.0, b"ab")
    assert not line.full()
    line.push(0.0, b"cd")
    assert line.full()
    line.pop_due(0.0)
    assert not line.full()
