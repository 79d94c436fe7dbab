"""Ports aa picks for brokers it starts: never one another process picked a moment before."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from aa.dev import cluster

pytestmark = pytest.mark.unit


def _free_band(n: int) -> tuple[int, int]:
    """``n`` consecutive ports free now, in aa's range."""
    for low in range(cluster.FREE_PORT_RANGE[0] + 7919, cluster.FREE_PORT_RANGE[1] - n, 97):
        socks = []
        try:
            for port in range(low, low + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        return low, low + n
    raise AssertionError("no free band")


def test_ports_picked_for_a_broker_not_started_yet_are_not_picked_by_another_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two `make test` runs at once (a loaded machine): a broker of one never started, "failed
    to bind to 127.0.0.1:30804: Address already in use". Its ports were free when picked, and
    the other run picked one of them while the broker was still on its way (a Java class
    compiled in between). A pick holds its ports for every process on the machine until the
    broker had time to bind them."""
    band = _free_band(2)
    monkeypatch.setattr(cluster, "FREE_PORT_RANGE", band)
    # the leases of this test alone: a second suite running it at once leases the same band
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = cluster.free_ports(2)  # both ports of the band, not bound yet
    assert sorted(mine) == list(range(*band))
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom aa.dev import cluster\n"
            f"cluster.FREE_PORT_RANGE = {band!r}\n"
            "try:\n    print(cluster.free_ports(1))\nexcept Exception as exc:\n    print(exc)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert "found only 0 of 1 free ports" in other.stdout, other.stdout + other.stderr
