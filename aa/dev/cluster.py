"""Start, stop and inspect single-node KRaft clusters, one per DC, with ``java -cp``.

Layout under the state folder (``$AA_DEV_HOME``, else ``$XDG_STATE_HOME/aa/dev``, else
``~/.local/state/aa/dev``)::

    clusters.json            the DCs and their ports, so later commands find them
    <DC>/server.properties   broker + controller config
    <DC>/data/               KRaft metadata and log segments
    <DC>/logs/server.log     the broker's log (log4j2 on 4.x, log4j 1 on 3.x), and stdout.log for
                             the JVM's own output
    <DC>/broker.pid          the pid of the JVM aa started; `down` stops only that process
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from aa.dev.artifacts import (
    classpath,
    fetch,
    java_executable,
    kafka_artifacts,
    log_config_flags,
    spawn,
)
from aa.dev.artifacts import (
    kafka_version as kafka_version,
)
from aa.dev.layout import DEFAULT_BASE_PORT as DEFAULT_BASE_PORT
from aa.dev.layout import DEFAULT_DCS as DEFAULT_DCS
from aa.dev.layout import DEFAULT_HEAP as DEFAULT_HEAP
from aa.dev.layout import DEFAULT_PORT_STEP as DEFAULT_PORT_STEP
from aa.dev.layout import LEGACY_KAFKA_VERSION as LEGACY_KAFKA_VERSION
from aa.dev.layout import START_TIMEOUT_S as START_TIMEOUT_S
from aa.dev.layout import STATE_FILE as STATE_FILE
from aa.dev.layout import ClusterStatus as ClusterStatus
from aa.dev.layout import DevCluster as DevCluster
from aa.dev.layout import _properties, _save
from aa.dev.layout import load as load
from aa.dev.layout import plan as plan
from aa.dev.layout import state_root as state_root
from aa.errors import DevClusterError
from aa.logs import get_logger, quiet_client_logs

log = get_logger("aa.dev")


def pid_of(c: DevCluster) -> int | None:
    """The pid of the broker aa started for ``c`` if it still runs, else ``None``."""
    try:
        pid = int(c.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return None
    if b"kafka.Kafka" in cmdline and str(c.properties).encode() in cmdline:
        return pid
    return None  # the pid was reused by something else: not ours


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # like the broker itself: a port in TIME_WAIT after a restart is free to listen on
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _tail(c: DevCluster, lines: int = 25) -> str:
    chunks = []
    for name in ("stdout.log", "server.log"):
        path = c.log_dir / name
        if path.exists():
            text = path.read_text(errors="replace").strip().splitlines()[-lines:]
            chunks.append(f"--- {path} ---\n" + "\n".join(text))
    return "\n".join(chunks) or "(no log written)"


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _format(java: str, todo: list[DevCluster]) -> None:
    procs = []
    for c in todo:
        cp = classpath(fetch(kafka_artifacts(c.kafka_version)))
        cmd = [
            java,
            "-Xmx256m",
            "-cp",
            cp,
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={_cluster_id()}",
            f"--config={c.properties}",
            "--ignore-formatted",
            *c.format_args,
        ]
        out = (c.log_dir / "format.log").open("w")
        procs.append((c, subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT), out))
    for c, proc, out in procs:
        code = proc.wait()
        out.close()
        if code != 0:
            text = (c.log_dir / "format.log").read_text(errors="replace")[-2000:]
            raise DevClusterError(f"formatting the storage of {c.name} failed:\n{text}")


def _launch(java: str, c: DevCluster, heap: str) -> subprocess.Popen[bytes]:
    cp = os.pathsep.join([classpath(fetch(kafka_artifacts(c.kafka_version))), *c.classpath])
    cmd = [
        java,
        f"-Xmx{heap}",
        "-Xms128m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        *log_config_flags(c.kafka_version, c.log_dir),
        *c.jvm_options,
        "-cp",
        cp,
        "kafka.Kafka",
        str(c.properties),
    ]
    proc = spawn(cmd, c.log_dir / "stdout.log", c.home)
    c.pid_file.write_text(str(proc.pid))
    return proc


def _listening(bootstrap: str) -> bool:
    host, _, port = bootstrap.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((host, int(port))) == 0


async def _answers(bootstrap: str) -> bool:
    """True when the broker answers a metadata request with at least one broker."""
    from aiokafka import AIOKafkaClient  # local: keep `aa --help` fast

    if not _listening(bootstrap):
        return False
    client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=3000)
    try:
        await client.bootstrap()
        return bool(client.cluster.brokers())
    except Exception:  # noqa: BLE001 - any failure means "not answering yet"
        return False
    finally:
        await client.close()


async def _wait_healthy(
    clusters: Sequence[DevCluster], procs: dict[str, subprocess.Popen[bytes]], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    pending = list(clusters)
    while pending:
        for c in list(pending):
            # A just-forked child shows the parent's cmdline until exec: ask Popen, not /proc.
            proc = procs.get(c.name)
            alive = proc.poll() is None if proc is not None else pid_of(c) is not None
            if not alive:
                raise DevClusterError(
                    f"the broker of {c.name} exited during start-up; its log says:\n{_tail(c)}"
                )
            if await _answers(c.bootstrap):
                pending.remove(c)
        if pending and time.monotonic() > deadline:
            names = ", ".join(c.name for c in pending)
            raise DevClusterError(
                f"{names} did not answer a metadata request within {timeout:.0f}s; logs:\n"
                + "\n".join(_tail(c) for c in pending)
            )
        if pending:
            await asyncio.sleep(0.3)


def up(
    clusters: Sequence[DevCluster],
    *,
    heap: str = DEFAULT_HEAP,
    timeout: float = START_TIMEOUT_S,
) -> list[tuple[DevCluster, bool]]:
    """Start the clusters that are not running; wait until every one answers metadata.

    Idempotent: a DC whose broker already runs is left alone. Returns ``(cluster, started)``.
    A start that fails (or is interrupted) stops the brokers this call launched.
    """
    java = java_executable()
    for version in sorted({c.kafka_version for c in clusters}):
        fetch(kafka_artifacts(version))
    to_start = [c for c in clusters if pid_of(c) is None]
    for c in to_start:
        for port, role in ((c.port, "broker"), (c.controller_port, "controller")):
            if not _port_free(port):
                raise DevClusterError(
                    f"port {port} ({role} of {c.name}) is already in use by another process: "
                    "stop that process, or choose other ports with --base-port/--port-step"
                )
    for c in to_start:
        c.log_dir.mkdir(parents=True, exist_ok=True)
        c.data_dir.mkdir(parents=True, exist_ok=True)
        c.properties.write_text(_properties(c))
    if clusters:
        _save(clusters[0].home.parent, clusters)
    _format(java, [c for c in to_start if not (c.data_dir / "meta.properties").exists()])
    procs = {}
    for c in to_start:
        procs[c.name] = proc = _launch(java, c, heap)
        log.info(
            "broker_started",
            dc=c.name,
            pid=proc.pid,
            bootstrap=c.bootstrap,
            kafka=c.kafka_version,
            logs=str(c.log_dir),
        )
    try:
        with quiet_client_logs():
            asyncio.run(_wait_healthy(clusters, procs, timeout))
    except BaseException as e:
        stopped = ", ".join(stop_all(to_start)) or "none"
        if isinstance(e, DevClusterError):
            raise DevClusterError(
                f"{e}\nstopped the brokers this start launched: {stopped}"
            ) from None
        raise
    return [(c, c in to_start) for c in clusters]


def stop(c: DevCluster, *, timeout: float = 30.0, kill: bool = False) -> bool:
    """Stop the broker aa started for ``c`` (SIGTERM, then SIGKILL after ``timeout``)."""
    return bool(stop_all([c], timeout=timeout, kill=kill))


def stop_all(
    clusters: Sequence[DevCluster], *, timeout: float = 30.0, kill: bool = False
) -> list[str]:
    """Signal every running broker first, then wait for all: shutdowns overlap."""
    running = {}
    for c in clusters:
        pid = pid_of(c)
        if pid is None:
            c.pid_file.unlink(missing_ok=True)
            continue
        os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        running[c.name] = (c, pid)
    deadline = time.monotonic() + timeout
    escalated = False
    while any(pid_of(c) is not None for c, _ in running.values()):
        if time.monotonic() > deadline and not escalated:
            for c, pid in running.values():
                if pid_of(c) is not None:
                    os.kill(pid, signal.SIGKILL)
            escalated = True
        for _, pid in running.values():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        time.sleep(0.1)
    for c, pid in running.values():
        c.pid_file.unlink(missing_ok=True)
        log.info("broker_stopped", dc=c.name, pid=pid)
    return list(running)


def down(root: Path, names: Sequence[str] | None = None, *, wipe: bool = False) -> list[str]:
    """Stop the brokers under ``root`` (all, or ``names``); ``wipe`` deletes their data too."""
    clusters = [c for c in load(root) if not names or c.name in names]
    stopped = stop_all(clusters)
    if wipe:
        for c in clusters:
            shutil.rmtree(c.home, ignore_errors=True)
        remaining = [c for c in load(root) if c not in clusters]
        (root / STATE_FILE).unlink(missing_ok=True)
        if remaining:
            _save(root, remaining)
    return stopped


def status(root: Path) -> list[ClusterStatus]:
    async def one(c: DevCluster) -> ClusterStatus:
        pid = pid_of(c)
        if pid is None:
            return ClusterStatus(c, None, False, "not running")
        ok = await _answers(c.bootstrap)
        return ClusterStatus(c, pid, ok, "healthy" if ok else "running, not answering")

    async def all_() -> list[ClusterStatus]:
        return list(await asyncio.gather(*(one(c) for c in load(root))))

    with quiet_client_logs():
        return asyncio.run(all_())


FREE_PORT_RANGE = (10000, 32000)
"""Where :func:`free_ports` picks: below the ephemeral range, above the usual service ports."""

PORT_LEASE_S = 600.0
"""How long a picked port stays taken for other pickers on the machine (every ``aa dev`` and
test run): longer than a broker takes to bind it on a loaded machine."""


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports free now, below the kernel's ephemeral range, and not
    picked by any live process on this machine in the last :data:`PORT_LEASE_S`.

    Ports from ``bind(0)`` come out of the ephemeral range (32768-60999 on Linux), the range the
    kernel also hands to outgoing connections: between the pick and the broker's bind, a
    client's connection could take the port (seen as a broker that never starts on a busy
    machine). Ports in ``FREE_PORT_RANGE`` are never given to clients. A port is free when
    picked and bound only once its broker starts; meanwhile another run on the machine (two
    suites at once) could pick it too, so each pick is leased (:class:`_Leases`)."""
    rng = random.SystemRandom()
    low, high = FREE_PORT_RANGE
    ports: list[int] = []
    with _Leases() as leases:
        for _ in range(50 * n):
            if len(ports) == n:
                break
            port = rng.randrange(low, high)
            if port in ports or leases.held(port) or not bindable(port):
                continue
            ports.append(port)
        if len(ports) < n:
            raise DevClusterError(f"found only {len(ports)} of {n} free ports in {low}-{high}")
        for port in ports:
            leases.take(port)
    return ports


def bindable(port: int) -> bool:
    """Whether ``port`` of 127.0.0.1 can be bound now."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class _Leases:
    """The ports picked on this machine lately: one file per port (the picker's pid and
    when), read and written under a lock file, so two pickers never take one port."""

    def __init__(self) -> None:
        self.root = Path(tempfile.gettempdir()) / f"aa-port-leases-{os.getuid()}"
        self._lock: int | None = None

    def __enter__(self) -> _Leases:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            os.close(self._lock)  # releases the lock

    def held(self, port: int) -> bool:
        try:
            pid, at = (self.root / str(port)).read_text().split()
            fresh = time.time() - float(at) < PORT_LEASE_S
        except (OSError, ValueError):
            return False
        return fresh and _alive(int(pid))

    def take(self, port: int) -> None:
        (self.root / str(port)).write_text(f"{os.getpid()} {time.time()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
