"""The README's first run works as written (issue 35, item 2): its commands run in order, in one
bash, on real dev clusters. The one rewrite is the ports: the README uses aa's defaults
(19092 / 29092 / 39092, metrics 9464), which a shared test machine cannot reserve, so
`aa dev up` gets `--base-port`/`--port-step` and every port number is replaced by a free one,
in the commands and in the copy of examples/topology.yaml they read."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aa.dev import cluster as devcluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
HEADING = "## A first run"
DEFAULT_PORTS = (19092, 29092, 39092)
METRICS_PORT = 9464


def readme_commands() -> list[str]:
    """The lines of the first ```bash block under :data:`HEADING`."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(HEADING) :]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, f"no bash block under {HEADING!r}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _ports() -> tuple[int, int, int]:
    """A base and a step whose three brokers and controllers are free, and a metrics port."""
    for _ in range(200):
        [base, metrics] = devcluster.free_ports(2)
        step = 10
        wanted = [base + i * step + c for i in range(3) for c in (0, 1)]
        if all(devcluster._port_free(p) for p in wanted) and metrics not in wanted:
            return base, step, metrics
    raise AssertionError("no free ports for three dev clusters")


def _rewrite(text: str, base: int, step: int, metrics: int) -> str:
    for i, port in enumerate(DEFAULT_PORTS):
        text = text.replace(str(port), str(base + i * step))
    return text.replace(str(METRICS_PORT), str(metrics))


def test_the_readme_first_run_works_as_written(tmp_path: Path) -> None:
    base, step, metrics = _ports()
    lines = readme_commands()
    assert lines[0].startswith("aa dev up"), lines
    script = ["exec 2>&1"]
    for n, line in enumerate(lines):
        line = _rewrite(line, base, step, metrics)
        if line.startswith("aa dev up"):
            line = line.replace("aa dev up", f"aa dev up --base-port {base} --port-step {step}", 1)
        script += [line, f'echo "::line {n} rc $?"']
    (tmp_path / "examples").mkdir()
    topology = (ROOT / "examples" / "topology.yaml").read_text()
    (tmp_path / "examples" / "topology.yaml").write_text(_rewrite(topology, base, step, metrics))
    home = tmp_path / "dev"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "AA_DEV_HOME": str(home),
    }
    env.pop("AA_LOG_FORMAT", None)
    env.pop("AA_LOG_LEVEL", None)
    proc = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its background `aa run` too: stopped below if it is left
    )
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None or _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
        devcluster.down(home, wipe=True)
    codes = {int(n): int(rc) for n, rc in re.findall(r"^::line (\d+) rc (\d+)$", out, re.M)}
    assert len(codes) == len(lines), out
    expected = {n: 1 if line.startswith("aa status") else 0 for n, line in enumerate(lines)}
    assert codes == expected, out
    assert re.search(
        r"^users/\d@0 alice \{\"book\": \"Dune\"\}  aa-origin=SF aa-path=SF,NYC", out, re.M
    ), out
    assert 'aa_records_replicated_total{source="SF",target="NYC",topic="users"} 1.0' in out, out
    assert re.search(r"^SF->NYC +running ", out, re.M), out
    assert "attention: flow SF->LON: no process" in out, out
    assert "stopped: SF, NYC, LON" in out, out
    log = (tmp_path / "nyc.log").read_text()
    assert "mirror_started" in log, log
    # a normal first start logs no error (aiokafka said "Topic ... not found" at ERROR)
    assert not re.findall(r"error|Traceback", log, re.I), log


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
