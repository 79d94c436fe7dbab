"""Heartbeats (:mod:`aa.heartbeat.model`): the view of remote DCs keeps the newest beat."""

from __future__ import annotations

import pytest

from aa.heartbeat.model import Heartbeat, HeartbeatView
from aa.provenance import MIRRORED_AT

pytestmark = pytest.mark.unit


def test_heartbeat_view_keeps_the_newest_remote_beat() -> None:
    view = HeartbeatView("NYC")
    view.add(Heartbeat("SF", 1000).encode(), [(MIRRORED_AT, b"1300")], read_ms=2000)
    view.add(Heartbeat("SF", 900).encode(), [], read_ms=2000)
    view.add(Heartbeat("NYC", 5000).encode(), [], read_ms=5000)  # our own: ignored
    view.add(b"not json", [], read_ms=0)
    sf = view.remotes["SF"]
    assert (sf.newest_ms, sf.latency_s, sf.age_s(3000)) == (1000, 0.3, 2.0)
    assert set(view.remotes) == {"SF"}
