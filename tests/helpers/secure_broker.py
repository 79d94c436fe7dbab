"""Local brokers with authenticated listeners, started by the product launcher, and the
topology files that reach them.

Listeners of each broker: ``SASL_SSL`` (TLS with the test CA's certificate, SCRAM),
``SASL_PLAINTEXT`` (SCRAM; OAUTHBEARER validated against a test identity provider's JWKS when
one is given; GSSAPI when a KDC is given), ``MTLS`` (TLS that requires a client certificate
signed by the test CA), ``MSK`` (SASL_PLAINTEXT OAUTHBEARER accepting and recording any token,
for AWS MSK IAM, when the test plugin was compiled), and an unauthenticated ``INTERNAL`` one on
loopback that the broker uses for itself, the launcher for its health check and the tests to
write and read. SCRAM users are created when the storage is formatted (``StorageTool format
--add-scram``), as a KRaft cluster's first users must be. One broker per DC serves every
mechanism.
"""

from __future__ import annotations

import concurrent.futures
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aa.dev import cluster as devcluster
from tests.helpers import kdc as kerberos
from tests.helpers import msk, oauth
from tests.helpers.tls import ClientStores, Pki

SCRAM = "SCRAM-SHA-256"
_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PORTS_PER_BROKER = 6


@dataclass(frozen=True, slots=True)
class SecureBroker:
    cluster: devcluster.DevCluster
    sasl_ssl: str
    """``127.0.0.1:port`` of the SASL_SSL listener."""
    sasl_plaintext: str
    """``127.0.0.1:port`` of the SASL_PLAINTEXT listener."""
    mtls: str
    """``127.0.0.1:port`` of the SSL listener that requires a client certificate."""
    msk: str
    """``127.0.0.1:port`` of the listener that records OAUTHBEARER tokens (AWS MSK IAM)."""
    token_log: Path
    """Where that listener records the tokens it was sent, one per line."""


def secure_cluster(
    name: str,
    root: Path,
    ports: list[int],
    pki: Pki,
    users: dict[str, str],
    *,
    idp: oauth.IdentityProvider | None = None,
    kdc: kerberos.Kdc | None = None,
    msk_classes: Path | None = None,
) -> SecureBroker:
    """The launcher's spec for a broker with the listeners above on ``ports`` (internal,
    controller, sasl_ssl, sasl_plaintext, mtls, msk); ``users`` maps SCRAM user -> password."""
    internal, controller, ssl_port, plain_port, mtls_port, msk_port = ports
    listeners = {
        "INTERNAL": internal,
        "SASL_SSL": ssl_port,
        "SASL_PLAINTEXT": plain_port,
        "MTLS": mtls_port,
        **({"MSK": msk_port} if msk_classes else {}),
    }
    addr = ",".join(f"{n}://127.0.0.1:{p}" for n, p in listeners.items())
    plain_mechanisms = [SCRAM, *(["OAUTHBEARER"] if idp else []), *(["GSSAPI"] if kdc else [])]
    extra = [
        ("listeners", f"{addr},CONTROLLER://127.0.0.1:{controller}"),
        ("advertised.listeners", addr),
        (
            "listener.security.protocol.map",
            "INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,MTLS:SSL,"
            "MSK:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        ),
        ("inter.broker.listener.name", "INTERNAL"),
        ("sasl.enabled.mechanisms", SCRAM),
        ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", ",".join(plain_mechanisms)),
        ("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", _LOGIN),
        ("listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", _LOGIN),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", str(pki.broker_keystore)),
        ("ssl.client.auth", "none"),
        ("listener.name.mtls.ssl.client.auth", "required"),
        ("listener.name.mtls.ssl.truststore.type", "PEM"),
        ("listener.name.mtls.ssl.truststore.location", str(pki.ca_file)),
    ]
    jvm: list[str] = []
    if idp is not None:
        extra += oauth.broker_settings(idp, "SASL_PLAINTEXT")
        jvm += oauth.broker_jvm_options(idp)
    if kdc is not None:
        extra += kerberos.broker_settings(kdc, "SASL_PLAINTEXT")
        jvm += kerberos.broker_jvm_options(kdc)
    token_log = root / name / "msk-tokens.txt"
    if msk_classes is not None:
        extra += msk.broker_settings("MSK")
        jvm += msk.broker_jvm_options(token_log)
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
        jvm_options=tuple(jvm),
        classpath=(str(msk_classes),) if msk_classes else (),
    )
    return SecureBroker(
        spec, f"127.0.0.1:{ssl_port}", f"127.0.0.1:{plain_port}", f"127.0.0.1:{mtls_port}",
        f"127.0.0.1:{msk_port}", token_log,
    )  # fmt: skip


def start(brokers: list[SecureBroker]) -> None:
    # `up` runs its own event loop; from inside an async test, give it a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(devcluster.up, [b.cluster for b in brokers], heap="384m", timeout=300).result()


@dataclass(frozen=True, slots=True)
class SecurePeers:
    """Two DCs' secure brokers and the peers they trust: the test CA (with a client identity in
    every form), the identity provider, and the KDC (``None`` where it cannot run: see
    :attr:`kdc_missing`)."""

    sf: SecureBroker
    nyc: SecureBroker
    pki: Pki
    client: ClientStores
    idp: oauth.IdentityProvider
    kdc: kerberos.Kdc | None
    kdc_missing: str | None
    msk_missing: str | None
    folder: Path


def write_topology(
    path: Path, topic: str, sf: dict[str, Any], nyc: dict[str, Any], **more: Any
) -> Path:
    """A topology of two DCs reaching the secure brokers as ``sf`` and ``nyc`` say, copying
    ``topic`` both ways (heartbeats and checkpoints off: the tests look at their own topic)."""
    doc = {
        "datacenters": {"SF": sf, "NYC": nyc},
        "flows": "full-mesh",
        "topics": [re.escape(topic)],
        "heartbeats": {"enabled": False},
        "checkpoints": {"enabled": False},
        **more,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
