"""SASL GSSAPI (Kerberos) on a real broker (issue 33, item 1): a real MIT KDC with its own realm
(tests/helpers/kdc.py), the brokers' SASL_PLAINTEXT listener accepting GSSAPI for
``kafka/127.0.0.1@AA.TEST``, and aa logging in as ``aa-mirror@AA.TEST`` from a keytab. Runs on
Kafka 4.x and 3.9 (marker kafka39). A stale keytab and a wrong service name are each one error
naming the DC and the field."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kdc as kerberos
from tests.helpers.secure_broker import SecurePeers, write_topology
from tests.helpers.security_proof import copy_both_ways_and_fail_over, one_clear_error

pytestmark = [pytest.mark.integration]


@pytest.fixture
def kdc(secure_peers: SecurePeers, monkeypatch: pytest.MonkeyPatch) -> kerberos.Kdc:
    if secure_peers.kdc is None:
        pytest.skip(f"{secure_peers.kdc_missing} (make sysdeps installs them)")
    if importlib.util.find_spec("gssapi") is None:
        pytest.skip("the gssapi package is missing: pip install 'aa[kerberos]' (needs libkrb5-dev)")
    monkeypatch.setenv("KRB5_CONFIG", str(secure_peers.kdc.krb5_conf))  # for aa's processes
    return secure_peers.kdc


def _dc(bootstrap: str, kdc: kerberos.Kdc, **sasl: Any) -> dict[str, Any]:
    return {
        "bootstrap": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl": {
            "mechanism": "GSSAPI",
            "keytab": str(kdc.client_keytab),
            "principal": kerberos.CLIENT_PRINCIPAL,
            **sasl,
        },
    }


@pytest.mark.slow
@pytest.mark.kafka39  # the brokers' side of GSSAPI on 3.9 too; the mistakes are aa's own
async def test_mirror_and_failover_over_kerberos(
    secure_peers: SecurePeers,
    kdc: kerberos.Kdc,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    topic = unique_name("orders")
    config = write_topology(
        tmp_path / "t.yaml", topic,
        _dc(secure_peers.sf.sasl_plaintext, kdc), _dc(secure_peers.nyc.sasl_plaintext, kdc),
    )  # fmt: skip
    await copy_both_ways_and_fail_over(secure_peers, config, topic, tmp_path, unique_name, [])


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "wrong-keytab",
            # both DCs name the stale keytab (one identity per process): the first read is named
            r"DC (SF|NYC): cannot log in as aa-mirror@AA\.TEST with datacenters\.\1\.sasl\.keytab "
            r".*aa-stale\.keytab \(.*\): check datacenters\.\1\.sasl\.keytab and "
            r"datacenters\.\1\.sasl\.principal",
        ),
        (
            "wrong-service-name",
            r"DC SF \(127\.0\.0\.1:\d+, SASL_PLAINTEXT\): Kerberos could not get a ticket for the "
            r"broker \(.*\): check datacenters\.SF\.sasl\.kerberos_service_name \(kafka-typo;",
        ),
    ],
)
async def test_kerberos_mistake_is_one_clear_error(
    secure_peers: SecurePeers,
    kdc: kerberos.Kdc,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    case: str,
    message: str,
) -> None:
    if case == "wrong-keytab":
        sf = _dc(secure_peers.sf.sasl_plaintext, kdc, keytab=str(kdc.stale_keytab))
        nyc = _dc(secure_peers.nyc.sasl_plaintext, kdc, keytab=str(kdc.stale_keytab))
    else:
        sf = _dc(secure_peers.sf.sasl_plaintext, kdc, kerberos_service_name="kafka-typo")
        nyc = _dc(secure_peers.nyc.sasl_plaintext, kdc)
    config = str(write_topology(tmp_path / "t.yaml", unique_name("t"), sf, nyc))
    await one_clear_error(config, message, [], case)
