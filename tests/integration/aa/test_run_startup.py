"""`aa run` at start: a DC that never answered is refused naming its bootstrap, a pattern that
matches no topic is named, a stop signal while it starts or runs exits 0 (SIGTERM) or 130
(SIGINT)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.conftest import DcCluster, _free_ports
from tests.helpers.cli import aa_cli
from tests.helpers.kafka import create_topic, eventually
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
    # the CLI's usual hang guard, not 60 s: loaded (two suites, load ~200) the refusal took
    # longer than that to start Python and ask both clusters
    result = await aa_cli(*args)
    assert result.code != 0, result.out
    message = result.err + result.out
    assert "datacenters.LON and datacenters.SF reach the same Kafka cluster" in message, message
    assert "fix datacenters.LON.bootstrap or datacenters.SF.bootstrap" in message, message


async def test_a_target_dc_that_never_answered_is_refused_at_start_naming_its_bootstrap(
    tmp_path: Path, dc_clusters: dict[str, DcCluster]
) -> None:
    """Issue 35, item 1: with its own DC's port wrong, `aa run` logged `mirror_started` and
    retried `Unable to bootstrap` forever. At start, a DC that never answered is one line
    naming `datacenters.X.bootstrap`, exit 2."""
    [wrong] = _free_ports(1)
    config = write_topology(
        tmp_path / "t.yaml",
        {"SF": dc_clusters["SF"].bootstrap, "NYC": f"127.0.0.1:{wrong}"},
        flows=["SF->NYC"],
    )
    result = await aa_cli(
        "run", "--config", str(config), "--dc", "NYC", "--metrics-port", "0", timeout=90
    )
    assert result.code == 2, result
    [line] = [x for x in result.err.splitlines() if x.strip()]
    assert line.startswith("aa: error: DC NYC at 127.0.0.1:"), line
    assert "datacenters.NYC.bootstrap" in line, line
    assert "DC SF" not in line, line  # SF answered
    assert "mirror_started" not in result.out + result.err, result


async def test_run_with_its_metrics_port_taken_names_the_port_exit_2(
    tmp_path: Path, dc_clusters: dict[str, DcCluster]
) -> None:
    config = write_topology(
        tmp_path / "t.yaml",
        {"SF": dc_clusters["SF"].bootstrap, "NYC": dc_clusters["NYC"].bootstrap},
        flows=["SF->NYC"],
    )
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        result = await aa_cli(
            "run", "--config", str(config), "--dc", "NYC", "--metrics-port", port, timeout=90
        )
    assert result.code == 2, result
    lines = [x for x in result.err.splitlines() if x.startswith("aa: error")]
    assert len(lines) == 1, result.err
    assert port in lines[0], lines
    assert "--metrics-port" in lines[0], lines


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
async def test_ctrl_c_exits_130_and_sigterm_0_once_running(
    tmp_path: Path,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    sig: signal.Signals,
    code: int,
) -> None:
    """Issue 35, item 4: Ctrl-C of `aa run` exited 0; the docs say 130 (interrupted). SIGTERM,
    how a service manager stops it, is a normal stop: 0. The flow copies a topic of its own:
    the suite's clusters hold other tests' topics, some of them refused to this flow by an ACL
    (a flow that failed on one made the stop exit 1)."""
    topic = await create_topic(dc_clusters["SF"].bootstrap, unique_name("quiet"))
    config = write_topology(
        tmp_path / "t.yaml",
        {"SF": dc_clusters["SF"].bootstrap, "NYC": dc_clusters["NYC"].bootstrap},
        flows=["SF->NYC"],
        topics=[re.escape(topic)],
    )
    proc = AaProcess(
        ["run", "--config", str(config), "--dc", "NYC", "--metrics-port", "0"],
        tmp_path / "aa.log",
    )
    try:
        await eventually(lambda: "mirror_started" in proc.output(), timeout=90, message="start")
        proc.proc.send_signal(sig)
        got = proc.proc.wait(60)
    finally:
        proc.stop()
    assert got == code, proc.output()[-2000:]
    assert "shutdown_complete" in proc.output()


async def test_an_include_pattern_matching_no_topic_is_named_at_start(
    tmp_path: Path, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """Issue 35, item 7: `aa run` with a mistyped include pattern copied nothing, silently."""
    topic = await create_topic(dc_clusters["SF"].bootstrap, unique_name("users"))
    typo = topic + "z"
    config = write_topology(
        tmp_path / "t.yaml",
        {"SF": dc_clusters["SF"].bootstrap, "NYC": dc_clusters["NYC"].bootstrap},
        flows=["SF->NYC"],
        topics=[re.escape(typo), re.escape(topic)],
    )
    proc = AaProcess(
        ["run", "--config", str(config), "--dc", "NYC", "--metrics-port", "0"],
        tmp_path / "aa.log",
    )
    try:
        await eventually(lambda: "mirror_started" in proc.output(), timeout=90, message="start")
    finally:
        proc.stop()
    [line] = [x for x in proc.output().splitlines() if "topic_pattern_matches_nothing" in x]
    event = orjson.loads(line)
    assert (event["flow"], event["source"], event["level"]) == ("SF->NYC", "SF", "warning")
    assert event["patterns"] == [re.escape(typo)], event


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM now (Linux: SigCgt in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.parametrize("after_s", [0.0, 0.5, 1.5])
async def test_sigterm_at_any_moment_of_start_up_stops_the_process_cleanly(
    tmp_path: Path,
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    after_s: float,
) -> None:
    """From the moment aa handles signals, a SIGTERM at any point of its start-up (imports,
    config, pre-flight, the metrics server, the flows starting) ends it with exit 0 (issue 29,
    item 11: a final `aa run` stopped just after it started was killed by the signal, -15)."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    config = write_topology(
        tmp_path / "t.yaml", {"SF": sf, "NYC": nyc}, flows=["SF->NYC"], topics=[unique_name("t")]
    )
    proc = AaProcess(
        ["run", "--config", str(config), "--flow", "SF->NYC", "--metrics-port", "0"],
        tmp_path / "aa.log",
    )
    try:
        await eventually(
            lambda: _catches_sigterm(proc.proc.pid), timeout=60, interval=0.005,
            message="aa handles SIGTERM",
        )  # fmt: skip
        await asyncio.sleep(after_s)
        proc.proc.send_signal(signal.SIGTERM)
        code = proc.proc.wait(60)
    finally:
        proc.stop()
    assert code == 0, proc.output()[-2000:]


async def test_sigterm_while_aa_run_reads_its_config_exits_cleanly(tmp_path: Path) -> None:
    """The config is a pipe the test holds open and never writes: `aa run` waits reading it,
    in its start-up, before any DC is contacted. A SIGTERM there ends it with exit 0 (issue 29,
    item 11: aa handled SIGTERM only from its pre-flight check on, so a process stopped
    earlier was killed by the signal)."""
    config = tmp_path / "t.yaml"
    os.mkfifo(config)
    proc = AaProcess(
        ["run", "--config", str(config), "--flow", "SF->NYC", "--metrics-port", "0"],
        tmp_path / "aa.log",
    )
    writer = None
    try:
        # opening the write end succeeds once aa has opened the read end: it is reading now
        writer = await eventually(
            lambda: _write_end(config), timeout=60, interval=0.05, message="aa reads its config"
        )
        proc.proc.send_signal(signal.SIGTERM)
        code = proc.proc.wait(60)
    finally:
        proc.stop()
        if writer is not None:
            os.close(writer)
    assert code == 0, proc.output()[-2000:]


def _write_end(fifo: Path) -> int | None:
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: no reader yet
        return None
