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
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from aa.dev.artifacts import (
    classpath,
    fetch,
    java_executable,
    kafka_artifacts,
    kafka_version,
    log_config_flags,
)
from aa.errors import DevClusterError
from aa.logs import get_logger, quiet_client_logs
from aa.provenance import check_dc_name

DEFAULT_DCS = ("SF", "NYC", "LON")
DEFAULT_BASE_PORT = 19092
DEFAULT_PORT_STEP = 10000
DEFAULT_HEAP = "512m"
STATE_FILE = "clusters.json"
LEGACY_KAFKA_VERSION = "3.9.2"
"""What a ``clusters.json`` without versions was started with (aa's default before 4.x)."""

log = get_logger("aa.dev")


def state_root() -> Path:
    if env := os.environ.get("AA_DEV_HOME"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state") / "aa" / "dev"


@dataclass(frozen=True, slots=True)
class DevCluster:
    """One DC's local cluster: a combined broker+controller on loopback."""

    name: str
    port: int
    controller_port: int
    home: Path
    kafka_version: str = field(default_factory=kafka_version)
    extra_properties: tuple[tuple[str, str], ...] = ()
    """Broker settings added to (or replacing) aa's, e.g. TLS and SASL listeners; not recorded
    in ``clusters.json``: a caller that needs them passes them again on every start."""
    format_args: tuple[str, ...] = ()
    """Extra ``StorageTool format`` arguments, e.g. ``--add-scram`` to create SCRAM users."""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def properties(self) -> Path:
        return self.home / "server.properties"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def pid_file(self) -> Path:
        return self.home / "broker.pid"


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    cluster: DevCluster
    pid: int | None
    healthy: bool
    detail: str


def plan(
    names: Sequence[str],
    root: Path,
    *,
    base_port: int = DEFAULT_BASE_PORT,
    port_step: int = DEFAULT_PORT_STEP,
    version: str | None = None,
) -> list[DevCluster]:
    """Clusters for ``names``; DCs already recorded under ``root`` keep their ports and Kafka.

    ``version`` (``--kafka-version``) picks the Kafka of new DCs (default: ``$AA_KAFKA_VERSION``
    or aa's default); asking for another version than a recorded DC's is an error, because its
    storage was formatted by that version.
    """
    known = {c.name: c for c in load(root)}
    wanted = kafka_version(version)
    out = []
    for i, raw in enumerate(names):
        try:
            name = check_dc_name(raw.strip())
        except ValueError as exc:
            raise DevClusterError(f"--dcs: {exc}") from None
        if name in known:
            have = known[name]
            if version and have.kafka_version != wanted:
                raise DevClusterError(
                    f"DC {name} under {root} runs Kafka {have.kafka_version}, not {wanted}: "
                    f"use --kafka-version {have.kafka_version}, or `aa dev down --wipe` first"
                )
            out.append(have)
            continue
        port = base_port + i * port_step
        if not 1024 <= port <= 65534:
            raise DevClusterError(
                f"DC {name} would get port {port}, outside 1024-65534: lower --base-port or "
                "--port-step"
            )
        out.append(DevCluster(name, port, port + 1, root / name, wanted))
    if len({c.name for c in out}) != len(out):
        raise DevClusterError(f"--dcs names a DC twice: {','.join(names)}")
    return out


def load(root: Path) -> list[DevCluster]:
    try:
        raw = orjson.loads((root / STATE_FILE).read_bytes())
    except FileNotFoundError:
        return []
    except orjson.JSONDecodeError:
        raise DevClusterError(f"{root / STATE_FILE} is corrupt: run `aa dev down --wipe`") from None
    return [
        DevCluster(
            d["name"],
            d["port"],
            d["controller_port"],
            root / d["name"],
            d.get("kafka_version", LEGACY_KAFKA_VERSION),
        )
        for d in raw
    ]


def _save(root: Path, clusters: Iterable[DevCluster]) -> None:
    merged = {c.name: c for c in load(root)}
    merged.update({c.name: c for c in clusters})
    root.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "name": c.name,
            "port": c.port,
            "controller_port": c.controller_port,
            "kafka_version": c.kafka_version,
        }
        for c in merged.values()
    ]
    (root / STATE_FILE).write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))


def _properties(c: DevCluster) -> str:
    lines = _base_properties(c)
    if c.extra_properties:
        extra = dict(c.extra_properties)
        lines = [ln for ln in lines if ln.partition("=")[0] not in extra]
        lines[-1:-1] = [f"{k}={v}" for k, v in c.extra_properties]
    return "\n".join(lines)


def _base_properties(c: DevCluster) -> list[str]:
    return [
        "# written by `aa dev up`",
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{c.controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{c.port},CONTROLLER://127.0.0.1:{c.controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{c.port}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        f"log.dirs={c.data_dir}",
        "num.partitions=1",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=5",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.state.log.num.partitions=5",
        "group.initial.rebalance.delay.ms=0",
        "log.retention.hours=168",
        "delete.topic.enable=true",
        "",
    ]


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
    cp = classpath(fetch(kafka_artifacts(c.kafka_version)))
    cmd = [
        java,
        f"-Xmx{heap}",
        "-Xms128m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        *log_config_flags(c.kafka_version, c.log_dir),
        "-cp",
        cp,
        "kafka.Kafka",
        str(c.properties),
    ]
    with (c.log_dir / "stdout.log").open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=c.home,
        )
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
    timeout: float = 90.0,
) -> list[tuple[DevCluster, bool]]:
    """Start the clusters that are not running; wait until every one answers metadata.

    Idempotent: a DC whose broker already runs is left alone. Returns ``(cluster, started)``.
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
    with quiet_client_logs():
        asyncio.run(_wait_healthy(clusters, procs, timeout))
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


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports the kernel reports free now (for clusters on free ports)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports
