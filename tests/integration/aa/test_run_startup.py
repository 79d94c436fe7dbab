"""`aa run` stopped while it is still starting (its first connection hangs) exits 0."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import DcCluster, _free_ports
from tests.helpers.cli import aa_cli
from tests.helpers.kafka import eventually
from tests.helpers.processes import AaProcess, write_topology
from tests.helpers.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration


async def test_sigterm_while_the_first_connection_hangs_exits_cleanly(tmp_path: Path) -> None:
    # a "DC" whose address accepts connections and never answers (a black-holed link)
    [nowhere] = _free_ports(1)
    with TcpProxy(nowhere) as hole:
        hole.cut()
        config = write_topology(
            tmp_path / "t.yaml", {"SF": hole.address, "NYC": hole.address}, flows=["SF->NYC"]
        )
        proc = AaProcess(
            ["run", "--config", str(config), "--dc", "NYC", "--metrics-port", "0"],
            tmp_path / "aa.log",
        )
        try:
            # it is inside its first connection (the pre-flight check) when the signal comes
            await eventually(lambda: hole.open_connections > 0, timeout=120, message="connected")
            proc.proc.send_signal(signal.SIGTERM)
            code = proc.proc.wait(60)
        finally:
            proc.stop()
    assert code == 0, proc.output()[-2000:]


async def test_two_dcs_that_reach_the_same_cluster_are_refused_at_start_naming_both(
    tmp_path: Path, dc_clusters: dict[str, DcCluster]
) -> None:
    """A bootstrap copied from one DC to another (or two names for one cluster): `aa run`
    started, and both flows copied the cluster's records into NYC, each stamped with its own
    origin, so every record arrived twice under two origins."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    config = write_topology(
        tmp_path / "t.yaml", {"SF": sf, "NYC": nyc, "LON": sf}, flows=["SF->NYC", "LON->NYC"]
    )
    args = ("run", "--config", str(config), "--dc", "NYC", "--metrics-port", "0")
    result = await aa_cli(*args, timeout=60)
    assert result.code != 0, result.out
    message = result.err + result.out
    assert "datacenters.LON and datacenters.SF reach the same Kafka cluster" in message, message
    assert "fix datacenters.LON.bootstrap or datacenters.SF.bootstrap" in message, message
