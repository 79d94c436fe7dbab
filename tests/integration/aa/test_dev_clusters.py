"""The launcher and the harness against real brokers."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from aa.dev import artifacts, cluster
from aa.errors import DevClusterError
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, produce

pytestmark = pytest.mark.integration

# Recent CreateTimes: the mirror keeps timestamps, and a broker's time-based retention deletes
# segments of records older than retention.ms (7 days here) within minutes of their copy.
T0 = int(time.time() * 1000) - 60_000


async def test_headers_survive_a_round_trip(
    dc_clusters: dict[str, DcCluster], unique_name: object
) -> None:
    sf = dc_clusters["SF"].bootstrap
    topic = await create_topic(sf, unique_name("roundtrip"), partitions=2)  # type: ignore[operator]
    headers = [("trace", b"\x00\x01binary"), ("aa-origin", b"SF"), ("trace", b"again")]
    await produce(sf, topic, [Rec(b"k1", b"v1", headers, partition=1, timestamp_ms=T0)])
    [rec] = await consume_all(sf, topic, count=1)
    assert (rec.key, rec.value, rec.partition, rec.timestamp) == (
        b"k1",
        b"v1",
        1,
        T0,
    )
    assert list(rec.headers) == headers


def _free_port() -> int:
    """A port that is free together with the next one (the launcher's controller port), below
    the kernel's ephemeral range: a port from ``bind(0)`` (34113) had its neighbour taken by a
    client connection before the broker bound it, 30 s later on a loaded machine."""
    while True:
        [port] = cluster.free_ports(1)
        if port + 1 < cluster.FREE_PORT_RANGE[1] and cluster._port_free(port + 1):
            return port


def _aa(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aa.cli.main", "dev", "--home", str(home), *args],
        capture_output=True,
        text=True,
        # above `aa dev up`'s own bound, so that a slow start fails with its own message
        timeout=cluster.START_TIMEOUT_S + 120,
        check=False,
    )


def test_dev_up_status_down_cli(tmp_path: Path) -> None:
    port = _free_port()
    version = artifacts.kafka_version()
    first_pid = None
    try:  # stopped whatever happens (a start past the test's bound left its broker running)
        up = _aa(
            tmp_path, "up", "--dcs", "EDGE", "--base-port", str(port), "--kafka-version", version
        )
        assert up.returncode == 0, up.stderr
        assert f"EDGE     127.0.0.1:{port}" in up.stdout
        assert f"kafka {version}" in up.stdout
        assert "started" in up.stdout
        [c] = cluster.load(tmp_path)
        assert c.kafka_version == version
        # The shipped log config (log4j2 on 4.x, log4j 1 on 3.x) writes the broker's own log.
        assert "Kafka Server started" in (c.log_dir / "server.log").read_text()
        first_pid = cluster.pid_of(c)

        again = _aa(tmp_path, "up", "--dcs", "EDGE", "--base-port", str(port))
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stdout
        assert cluster.pid_of(c) == first_pid  # no duplicate broker

        status = _aa(tmp_path, "status")
        assert status.returncode == 0
        assert "healthy" in status.stdout
    finally:
        down = _aa(tmp_path, "down", "--wipe")
    assert down.returncode == 0, down.stderr
    assert "stopped: EDGE" in down.stdout
    assert first_pid is not None
    assert (
        not Path(f"/proc/{first_pid}").exists()
        or b"kafka.Kafka" not in Path(f"/proc/{first_pid}/cmdline").read_bytes()
    )
    assert not (tmp_path / "EDGE").exists()


def test_broker_that_cannot_start_shows_its_log(tmp_path: Path) -> None:
    port = _free_port()
    spec = cluster.DevCluster("BAD", port, port + 1, tmp_path / "BAD")
    # A heap the JVM refuses: the process exits at once and its output names the cause.
    with pytest.raises(DevClusterError, match=r"(?s)BAD exited during start-up.*heap"):
        cluster.up([spec], heap="1k", timeout=60)
    cluster.down(tmp_path)


def test_brokers_that_do_not_answer_within_the_bound_are_stopped_not_left_running(
    tmp_path: Path,
) -> None:
    """`up` past its bound raised and left the brokers it had launched running: the demo,
    whose brokers were still in RECOVERY after 90 s on a loaded machine, then said "brokers
    none started by this run" and left three JVMs behind."""
    port = _free_port()
    spec = cluster.DevCluster("SLOW", port, port + 1, tmp_path / "SLOW")
    try:
        # no JVM answers metadata 0.1 s after its launch
        stopped = r"(?s)SLOW did not answer .*stopped the brokers this start launched: SLOW"
        with pytest.raises(DevClusterError, match=stopped):
            cluster.up([spec], timeout=0.1)
        assert cluster.pid_of(spec) is None
    finally:
        cluster.down(tmp_path)
