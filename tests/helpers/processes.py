"""Run `aa` commands as real processes in tests (the way operators run them)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson
import yaml


def write_topology(path: Path, clusters: dict[str, str], **fields: object) -> Path:
    """A topology YAML for ``clusters`` (DC -> bootstrap) with ``fields`` set; heartbeats and
    checkpoints off unless given, so tests see only their own topics' traffic."""
    doc: dict[str, object] = {
        "datacenters": {dc: {"bootstrap": b} for dc, b in clusters.items()},
        "heartbeats": {"enabled": False},
        "checkpoints": {"enabled": False},
    }
    doc.update(fields)
    path.write_text(yaml.safe_dump(orjson.loads(orjson.dumps(doc)), sort_keys=False))
    return path


def eos_topology(
    path: Path, sf: str, nyc: str, topic: str, **fields: object
) -> tuple[Path, list[str]]:
    """An exactly-once flow copying ``topic`` from ``sf`` to ``nyc`` (``fields`` added): the
    topology and the `aa run` arguments. DC names unique to the test: the transactional ids are
    per flow (``aa.eos.A.B``), and tests share brokers."""
    tag = uuid.uuid4().hex[:6]
    a, b = f"S{tag}", f"N{tag}"
    config = write_topology(
        path, {a: sf, b: nyc}, flows=[f"{a}->{b}"], topics=[topic], delivery="exactly-once",
        **fields,
    )  # fmt: skip
    return config, ["run", "--config", str(config), "--flow", f"{a}->{b}", "--metrics-port", "0"]


def _interruptible() -> None:
    """Ctrl-C reaches the command as it reaches one run from a terminal: a suite started in the
    background (`make test &`, a CI runner's job) ignores SIGINT, the child inherits that, and
    Python then installs no KeyboardInterrupt for it (`aa status --watch` ran on after the
    test's SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class AaProcess:
    """One `aa ...` subprocess with its output in a log file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.args = args
        self.log_path = log
        env = {**os.environ, "AA_LOG_FORMAT": "json"}
        self._log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aa.cli.main", *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_interruptible,
        )

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def note_logs(failed: BaseException, procs: Iterable[AaProcess], lines: int = 30) -> None:
    """Add each process's last log lines to the test's failure; a running `aa run` is asked
    first where its tasks wait (SIGUSR1: ``task_dump``), so a slow process and a stuck one
    can be told apart from the failure alone."""
    procs = list(procs)
    for p in procs:
        if p.proc.poll() is None:
            p.proc.send_signal(signal.SIGUSR1)
    time.sleep(1.0)  # the dump is written by the process's event loop
    for p in procs:
        tail = p.output().splitlines()[-lines:]
        failed.add_note(f"--- last {len(tail)} lines of {p.log_path}:\n" + "\n".join(tail))


@contextlib.contextmanager
def aa_processes(*runs: tuple[list[str], Path]) -> Iterator[list[AaProcess]]:
    procs = [AaProcess(args, log) for args, log in runs]
    try:
        yield procs
    finally:
        for p in procs:
            p.stop()
