"""Launch and stop the processes a run needs: replicators and Kafka's perf tools.

Every child starts in its own session so that stopping it (SIGTERM, then SIGKILL after a grace
period) takes its whole process group; :class:`Procs` stops whatever is still running when the
run ends, so no JVM outlives the harness.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from aa.dev.artifacts import (
    classpath,
    fetch,
    java_executable,
    kafka_artifacts,
    kafka_version,
    log_config_flags,
)

# The JVM options of Kafka's own start scripts (kafka-run-class.sh), so MM2 and the perf
# tools run as users run them. MM2's script (connect-mirror-maker.sh) sets -Xms256M -Xmx2G.
JVM_PERF_OPTS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
REPO = Path(__file__).resolve().parent.parent
MM2_HEAP = ("-Xms256M", "-Xmx2G")
TOOL_HEAP = ("-Xmx512M",)


@dataclass(frozen=True, slots=True)
class Spec:
    """What to run: ``argv``, and the folder its output (and logs) go to."""

    name: str
    argv: tuple[str, ...]
    log_dir: Path
    env: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class Running:
    spec: Spec
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return (self.spec.log_dir / "stdout.log").read_text(errors="replace")


def java_cmd(
    main: str, args: list[str], *, heap: tuple[str, ...], log_dir: Path
) -> tuple[str, ...]:
    version = kafka_version()
    cp = classpath(fetch(kafka_artifacts(version)))
    return (
        java_executable(),
        *heap,
        *JVM_PERF_OPTS,
        *log_config_flags(version, log_dir),
        "-cp",
        cp,
        main,
        *args,
    )


def python_cmd(module: str, args: list[str]) -> tuple[str, ...]:
    return (sys.executable, "-m", module, *args)


class Procs:
    """Owns every child of a run; ``with Procs() as procs`` stops the leftovers on exit."""

    def __init__(self) -> None:
        self._running: list[Running] = []

    def start(self, spec: Spec) -> Running:
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **dict(spec.env)}
        # Children run in their log folder: let `python -m bench...` find this checkout.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        with (spec.log_dir / "stdout.log").open("ab") as out:
            proc = subprocess.Popen(
                spec.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
                cwd=spec.log_dir,
            )
        running = Running(spec, proc)
        self._running.append(running)
        return running

    def stop(self, running: Running, *, grace_s: float = 15.0) -> int:
        """SIGTERM the process group, SIGKILL it after ``grace_s``; return the exit code."""
        if running in self._running:
            self._running.remove(running)
        if running.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.pid, signal.SIGTERM)
            try:
                running.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(running.pid, signal.SIGKILL)
                running.proc.wait()
        # Children that outlived the leader (none expected) go with the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(running.pid, signal.SIGKILL)
        return running.proc.returncode

    def run(self, spec: Spec, *, timeout_s: float) -> tuple[int, str]:
        """Run to completion (stopping it after ``timeout_s``); return exit code and output."""
        running = self.start(spec)
        try:
            running.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.stop(running)
            raise RuntimeError(
                f"{spec.name} did not finish within {timeout_s:.0f}s; see {spec.log_dir}"
            ) from None
        self.stop(running)
        return running.proc.returncode, running.output()

    def close(self) -> None:
        for running in list(self._running):
            self.stop(running, grace_s=5.0)

    def __enter__(self) -> Procs:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_PRODUCER_RE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency"
)


def parse_producer_perf(output: str) -> dict[str, float]:
    """The final summary line of ProducerPerformance."""
    matches = _PRODUCER_RE.findall(output)
    if not matches:
        raise RuntimeError(f"no ProducerPerformance summary in its output:\n{output[-2000:]}")
    n, rate, mb, avg, mx = matches[-1]
    return {
        "records": int(n),
        "records_per_s": float(rate),
        "mb_per_s": float(mb),
        "avg_latency_ms": float(avg),
        "max_latency_ms": float(mx),
    }


def parse_consumer_perf(output: str) -> dict[str, float]:
    """ConsumerPerformance's CSV line (header ``start.time, end.time, data.consumed.in.MB...``)."""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.startswith("start.time") and i + 1 < len(lines):
            keys = [k.strip() for k in line.split(",")]
            values = [v.strip() for v in lines[i + 1].split(",")]
            row = dict(zip(keys, values, strict=False))
            return {
                "records": int(row["data.consumed.in.nMsg"]),
                "mb": float(row["data.consumed.in.MB"]),
                "records_per_s": float(row["nMsg.sec"]),
                "mb_per_s": float(row["MB.sec"]),
                "rebalance_ms": float(row["rebalance.time.ms"]),
                "fetch_ms": float(row["fetch.time.ms"]),
                "fetch_records_per_s": float(row["fetch.nMsg.sec"]),
                "fetch_mb_per_s": float(row["fetch.MB.sec"]),
            }
    raise RuntimeError(f"no ConsumerPerformance result in its output:\n{output[-2000:]}")


def producer_perf(
    log_dir: Path,
    bootstrap: str,
    topic: str,
    records: int,
    size: int,
    rate: int,
    props: dict[str, str],
    payload_file: Path | None = None,
) -> Spec:
    """ProducerPerformance writing ``records`` of ``size`` bytes at ``rate``/s (-1: max);
    with ``payload_file``, values picked from its lines instead (``size`` is then theirs)."""
    what = ["--record-size", str(size)] if payload_file is None else [
        "--payload-file", str(payload_file)
    ]  # fmt: skip
    args = [
        "--topic", topic, "--num-records", str(records), *what,
        "--throughput", str(rate), "--producer-props", f"bootstrap.servers={bootstrap}",
        *(f"{k}={v}" for k, v in props.items()),
    ]  # fmt: skip
    argv = java_cmd(
        "org.apache.kafka.tools.ProducerPerformance", args, heap=TOOL_HEAP, log_dir=log_dir
    )
    return Spec(f"producer-perf {topic}", argv, log_dir)


def consumer_perf(
    log_dir: Path, bootstrap: str, topic: str, records: int, group: str, props: dict[str, str]
) -> Spec:
    log_dir.mkdir(parents=True, exist_ok=True)
    config = log_dir / "consumer.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    args = [
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
        "--group", group, "--timeout", "60000", "--consumer.config", str(config),
    ]  # fmt: skip
    argv = java_cmd(
        "org.apache.kafka.tools.ConsumerPerformance", args, heap=TOOL_HEAP, log_dir=log_dir
    )
    return Spec(f"consumer-perf {topic}", argv, log_dir)
