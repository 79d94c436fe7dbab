"""Mutual TLS and Java keystores on a real broker (issue 33, items 2 and 3): the brokers' MTLS
listener requires a client certificate signed by the test CA. aa presents it as a PEM
certificate with an encrypted key (password from the environment), or from PKCS12 and JKS
keystores written by Java's keytool, trusting the CA from PKCS12 and JKS truststores; each
mistake is one error naming the DC and the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import aa_cli
from tests.helpers.secure_broker import SecurePeers, write_topology
from tests.helpers.security_proof import copy_both_ways_and_fail_over, no_secret, one_clear_error

pytestmark = [pytest.mark.integration]

KEY_ENV = "AA_TEST_KEY_PASSWORD"
STORE_ENV = "AA_TEST_STORE_PASSWORD"


def _pem(peers: SecurePeers, **ssl: Any) -> dict[str, Any]:
    c = peers.client
    return {
        "bootstrap": peers.sf.mtls,
        "security_protocol": "SSL",
        "ssl": {
            "cafile": str(peers.pki.ca_file),
            "certfile": str(c.certfile),
            "keyfile": str(c.keyfile),
            "key_password": f"${{{KEY_ENV}}}",
            **ssl,
        },
    }


def _stores(peers: SecurePeers, keystore: Path, truststore: Path, **ssl: Any) -> dict[str, Any]:
    return {
        "bootstrap": peers.nyc.mtls,
        "security_protocol": "SSL",
        "ssl": {
            "truststore": str(truststore),
            "truststore_password": f"${{{STORE_ENV}}}",
            "keystore": str(keystore),
            "keystore_password": f"${{{STORE_ENV}}}",
            **ssl,
        },
    }


@pytest.fixture
def passwords(secure_peers: SecurePeers, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    monkeypatch.setenv(KEY_ENV, secure_peers.client.key_password)
    monkeypatch.setenv(STORE_ENV, secure_peers.client.store_password)
    return secure_peers.client.secrets


@pytest.mark.slow
async def test_mirror_and_failover_over_mutual_tls_with_pem_pkcs12_and_jks(
    secure_peers: SecurePeers,
    passwords: tuple[str, ...],
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    c = secure_peers.client
    topic = unique_name("orders")
    # SF: PEM certificate, encrypted PEM key; NYC: PKCS12 keystore, JKS truststore
    config = write_topology(
        tmp_path / "t.yaml", topic,
        _pem(secure_peers), _stores(secure_peers, c.keystore_p12, c.truststore_jks),
    )  # fmt: skip
    # the other forms (JKS keystore, PKCS12 truststore) for the commands run meanwhile
    other = write_topology(
        tmp_path / "jks.yaml", topic,
        _pem(secure_peers), _stores(secure_peers, c.keystore_jks, c.truststore_p12),
    )  # fmt: skip

    async def jks_commands() -> None:
        for command in ("plan", "lag"):
            r = await aa_cli(command, "--config", str(other))
            assert r.code == 0, r
            no_secret(f"aa {command} with JKS", r.out + r.err, passwords)

    await copy_both_ways_and_fail_over(
        secure_peers, config, topic, tmp_path, unique_name, passwords, while_running=jks_commands
    )


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "refused-client-certificate",
            r"DC SF \(127\.0\.0\.1:\d+, SSL\): the broker refused aa's TLS client certificate "
            r".*datacenters\.SF\.ssl\.certfile .*other-client\.pem",
        ),
        (
            "no-client-certificate",
            r"DC SF \(127\.0\.0\.1:\d+, SSL\): the broker refused aa's TLS client certificate .*"
            r"it requires one: set datacenters\.SF\.ssl\.certfile and keyfile",
        ),
        (
            "wrong-key-password",
            r"DC SF: datacenters\.SF\.ssl\.key_password does not decrypt the private key in "
            r"datacenters\.SF\.ssl\.keyfile: fix the password",
        ),
        (
            "wrong-keystore-password",
            r"DC NYC: datacenters\.NYC\.ssl\.keystore .*client\.jks cannot be opened \(JKS\): the "
            r"password is wrong: check datacenters\.NYC\.ssl\.keystore_password",
        ),
        (
            "wrong-truststore-password",
            r"DC NYC: datacenters\.NYC\.ssl\.truststore .*trust\.p12 cannot be opened \(PKCS12\)"
            r".*check datacenters\.NYC\.ssl\.truststore_password",
        ),
    ],
)
async def test_tls_mistake_is_one_clear_error(
    secure_peers: SecurePeers,
    passwords: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unique_name: Callable[[str], str],
    case: str,
    message: str,
) -> None:
    c = secure_peers.client
    sf = _pem(secure_peers)
    nyc = _stores(secure_peers, c.keystore_jks, c.truststore_p12)
    if case == "refused-client-certificate":
        sf["ssl"] |= {"certfile": str(c.other_certfile), "keyfile": str(c.other_keyfile)}
        del sf["ssl"]["key_password"]
    elif case == "no-client-certificate":
        sf["ssl"] = {"cafile": str(secure_peers.pki.ca_file)}
    elif case == "wrong-key-password":
        monkeypatch.setenv(KEY_ENV, "wrong-" + c.key_password)
    elif case == "wrong-keystore-password":
        nyc["ssl"]["keystore_password"] = "wrong-" + c.store_password
    else:
        nyc["ssl"]["truststore_password"] = "wrong-" + c.store_password
    config = str(write_topology(tmp_path / "t.yaml", unique_name("t"), sf, nyc))
    await one_clear_error(config, message, passwords, case)
