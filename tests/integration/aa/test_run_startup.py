"""`aa run` stopped while it is still starting (its first connection hangs) exits 0."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import _free_ports
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
