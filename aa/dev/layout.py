"""The layout of local dev clusters: which DCs, their ports and Kafka version
(``clusters.json``), and each broker's ``server.properties``. No processes here: they are
started and stopped by :mod:`aa.dev.cluster`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from aa.dev.artifacts import kafka_version
from aa.errors import DevClusterError
from aa.provenance import check_dc_name

DEFAULT_DCS = ("SF", "NYC", "LON")
DEFAULT_BASE_PORT = 19092
DEFAULT_PORT_STEP = 10000
DEFAULT_HEAP = "512m"
START_TIMEOUT_S = 300.0
"""How long ``up`` waits for a started broker to answer: a quiet machine takes ~5 s; three
brokers starting on a loaded 2-core machine took over 90 s (one still in RECOVERY)."""
STATE_FILE = "clusters.json"
LEGACY_KAFKA_VERSION = "3.9.2"
"""What a ``clusters.json`` without versions was started with (aa's default before 4.x)."""


def state_root() -> Path:
    if env := os.environ.get("AA_DEV_HOME"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state") / "aa" / "dev"


class _InHome:
    """A path under a cluster's home, read as an attribute: ``pid_file = _InHome("broker.pid")``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, cluster: DevCluster, owner: type | None = None) -> Path:
        return cluster.home / self.name


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
    jvm_options: tuple[str, ...] = ()
    """Extra JVM flags of the broker, e.g. ``-Djava.security.krb5.conf=...`` for Kerberos or
    ``-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=...`` for an OAuth JWKS endpoint."""
    classpath: tuple[str, ...] = ()
    """Extra classpath entries of the broker (plugins such as a SASL callback handler)."""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    properties = _InHome("server.properties")
    data_dir = _InHome("data")
    log_dir = _InHome("logs")
    pid_file = _InHome("broker.pid")


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
