"""A local broker with authenticated listeners, started by the product launcher.

Listeners: ``SASL_SSL`` (TLS with the test CA's certificate, SCRAM), ``SASL_PLAINTEXT``
(SCRAM), and an unauthenticated ``INTERNAL`` one on loopback that the broker uses for itself and
the launcher uses for its health check. SCRAM users are created when the storage is formatted
(``StorageTool format --add-scram``), as a KRaft cluster's first users must be.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from pathlib import Path

from aa.dev import cluster as devcluster
from tests.helpers.tls import Pki

SCRAM = "SCRAM-SHA-256"
_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@dataclass(frozen=True, slots=True)
class SecureBroker:
    cluster: devcluster.DevCluster
    sasl_ssl: str
    """``127.0.0.1:port`` of the SASL_SSL listener."""
    sasl_plaintext: str
    """``127.0.0.1:port`` of the SASL_PLAINTEXT listener."""


def secure_cluster(
    name: str,
    root: Path,
    ports: list[int],
    pki: Pki,
    users: dict[str, str],
) -> SecureBroker:
    """The launcher's spec for a broker with SASL_SSL and SASL_PLAINTEXT listeners on ``ports``
    (internal, controller, sasl_ssl, sasl_plaintext); ``users`` maps SCRAM user -> password."""
    internal, controller, ssl_port, plain_port = ports
    listeners = {
        "INTERNAL": internal,
        "SASL_SSL": ssl_port,
        "SASL_PLAINTEXT": plain_port,
    }
    addr = ",".join(f"{n}://127.0.0.1:{p}" for n, p in listeners.items())
    extra = [
        ("listeners", f"{addr},CONTROLLER://127.0.0.1:{controller}"),
        ("advertised.listeners", addr),
        (
            "listener.security.protocol.map",
            "INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "CONTROLLER:PLAINTEXT",
        ),
        ("inter.broker.listener.name", "INTERNAL"),
        ("sasl.enabled.mechanisms", SCRAM),
        ("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", _LOGIN),
        ("listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", _LOGIN),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", str(pki.broker_keystore)),
        ("ssl.client.auth", "none"),
    ]
    fmt: list[str] = []
    for user, password in users.items():
        fmt += ["--add-scram", f"{SCRAM}=[name={user},password={password}]"]
    spec = devcluster.DevCluster(
        name,
        internal,
        controller,
        root / name,
        extra_properties=tuple(extra),
        format_args=tuple(fmt),
    )
    return SecureBroker(spec, f"127.0.0.1:{ssl_port}", f"127.0.0.1:{plain_port}")


def start(brokers: list[SecureBroker]) -> None:
    # `up` runs its own event loop; from inside an async test, give it a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(devcluster.up, [b.cluster for b in brokers], heap="384m").result()
