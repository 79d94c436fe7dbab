"""Fixtures shared by the security tests (test_security*.py): one pair of secure brokers for
the whole session, with every mechanism's listener and peer (a CA, an OAuth identity provider,
a Kerberos KDC), so that each mechanism does not start brokers of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aa.dev import cluster as devcluster
from aa.dev.artifacts import kafka_version
from tests.conftest import _free_ports
from tests.helpers import kdc as kerberos
from tests.helpers import msk, secure_broker
from tests.helpers.oauth import IdentityProvider
from tests.helpers.tls import make_client_stores, make_pki

USER = "aa-mirror"
SF_SECRET = "sf-Pa55-" + "x7Qz"  # split: a grep of the sources for the value finds nothing
NYC_SECRET = "nyc-Pa55-" + "k2Wv"
OAUTH_CLIENT = "aa-mirror"
OAUTH_SECRET = "oauth-Cl13nt-" + "s3cr"
SHORT_CLIENT = "aa-short-lived"
"""Gets tokens that live 8 s: a flow must go on across many of them."""
EXPIRED_CLIENT = "aa-expired"
"""Gets tokens that expired a minute ago (the identity provider's clock is wrong)."""
SHORT_LIFETIME_S = 8.0


@pytest.fixture(scope="session")
def secure_peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[secure_broker.SecurePeers]:
    root = tmp_path_factory.mktemp("aa-secure")
    pki = make_pki(root / "pki")
    client = make_client_stores(pki)
    n = secure_broker.PORTS_PER_BROKER
    ports = _free_ports(2 * n + 2)
    idp = IdentityProvider(
        {
            OAUTH_CLIENT: (OAUTH_SECRET, 3600.0),
            SHORT_CLIENT: (OAUTH_SECRET, SHORT_LIFETIME_S),
            EXPIRED_CLIENT: (OAUTH_SECRET, -60.0),
        }
    ).start(ports[-1])
    kdc_missing = kerberos.missing()
    kdc = None if kdc_missing else kerberos.Kdc(root / "kdc", ports[-2]).start()
    msk_missing = msk.missing()
    classes = None if msk_missing else msk.compile_validator(root / "msk", kafka_version(None))
    try:
        sf, nyc = (
            secure_broker.secure_cluster(
                name,
                root,
                ports[i * n : (i + 1) * n],
                pki,
                {USER: secret},
                idp=idp,
                kdc=kdc,
                msk_classes=classes,
            )
            for i, (name, secret) in enumerate((("SF", SF_SECRET), ("NYC", NYC_SECRET)))
        )
        secure_broker.start([sf, nyc])
        try:
            yield secure_broker.SecurePeers(
                sf, nyc, pki, client, idp, kdc, kdc_missing, msk_missing, root
            )
        finally:
            devcluster.down(root)
    finally:
        idp.stop()
        if kdc is not None:
            kdc.stop()
