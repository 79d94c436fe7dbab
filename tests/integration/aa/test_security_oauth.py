"""SASL OAUTHBEARER on a real broker (issue 33, item 4): the brokers validate signed JWTs with
Kafka's OIDC validator against the JWKS of a test identity provider, and aa fetches its tokens
by OAuth client credentials from that provider's token endpoint. Short-lived tokens prove a
running flow goes on across their expiry; an expired token and a wrong client secret are each
one error naming the DC and the field."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.processes import AaProcess
from tests.helpers.secure_broker import SecurePeers, write_topology
from tests.helpers.security_proof import copy_both_ways_and_fail_over, no_secret, one_clear_error
from tests.integration.aa.conftest import (
    EXPIRED_CLIENT,
    OAUTH_CLIENT,
    OAUTH_SECRET,
    SHORT_CLIENT,
    SHORT_LIFETIME_S,
)

pytestmark = [pytest.mark.integration]

SECRET_ENV = "AA_TEST_OAUTH_SECRET"


def _dc(
    peers: SecurePeers, bootstrap: str, client: str = OAUTH_CLIENT, env: str = SECRET_ENV
) -> dict[str, Any]:
    return {
        "bootstrap": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl": {
            "mechanism": "OAUTHBEARER",
            "token_endpoint": peers.idp.token_url,
            "client_id": client,
            "client_secret": f"${{{env}}}",
        },
    }


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(SECRET_ENV, OAUTH_SECRET)
    return OAUTH_SECRET


@pytest.mark.slow
async def test_mirror_and_failover_over_oauthbearer_with_client_credentials(
    secure_peers: SecurePeers, secret: str, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("orders")
    config = write_topology(
        tmp_path / "t.yaml", topic,
        _dc(secure_peers, secure_peers.sf.sasl_plaintext),
        _dc(secure_peers, secure_peers.nyc.sasl_plaintext),
    )  # fmt: skip
    before = secure_peers.idp.issued[OAUTH_CLIENT]
    await copy_both_ways_and_fail_over(secure_peers, config, topic, tmp_path, unique_name, [secret])
    assert secure_peers.idp.issued[OAUTH_CLIENT] > before  # the tokens came from the endpoint


@pytest.mark.slow
async def test_a_running_flow_goes_on_across_token_expiry(
    secure_peers: SecurePeers, secret: str, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    """Tokens live 8 s; the broker closes a connection whose token expired. Records written over
    four token lifetimes are all copied by one `aa run`, which fetches new tokens meanwhile."""
    topic = unique_name("orders")
    config = write_topology(
        tmp_path / "t.yaml", topic,
        _dc(secure_peers, secure_peers.sf.sasl_plaintext, SHORT_CLIENT),
        _dc(secure_peers, secure_peers.nyc.sasl_plaintext, SHORT_CLIENT),
    )  # fmt: skip
    sf, nyc = secure_peers.sf.cluster.bootstrap, secure_peers.nyc.cluster.bootstrap
    for b in (sf, nyc):
        await create_topic(b, topic, partitions=2)
    issued = secure_peers.idp.issued[SHORT_CLIENT]
    run = AaProcess(
        ["run", "--config", str(config), "--dc", "NYC", "--metrics-port", "0"],
        tmp_path / "run.log",
    )
    try:
        waves, per_wave = 8, 25
        started = time.monotonic()
        for w in range(waves):  # the workload: a wave every half token lifetime
            recs = [Rec(f"k{i}".encode(), f"w{w}:{i}".encode()) for i in range(per_wave)]
            await produce(sf, topic, recs)
            await asyncio.sleep(SHORT_LIFETIME_S / 2)
        assert time.monotonic() - started > 3 * SHORT_LIFETIME_S
        got = await consume_all(nyc, topic, count=waves * per_wave, timeout=180, settle=1.0)
        assert len({r.value for r in got}) == waves * per_wave
        assert run.proc.poll() is None, run.output()[-3000:]
    finally:
        run.stop()
    assert secure_peers.idp.issued[SHORT_CLIENT] - issued >= 3, "tokens were not refreshed"
    assert '"flow_crashed"' not in run.output(), run.output()[-3000:]
    no_secret("the log of aa run", run.output(), [secret])


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "expired-token",
            r"DC SF \(127\.0\.0\.1:\d+, SASL_PLAINTEXT\): SASL OAUTHBEARER authentication failed "
            r"\(the broker says: .*\): the broker refused the token from "
            r"datacenters\.SF\.sasl\.token_endpoint \(client 'aa-expired'\): check that it is "
            r"not expired",
        ),
        (
            "wrong-client-secret",
            r"DC SF: the token endpoint http://127\.0\.0\.1:\d+/token refused aa \(HTTP 401: "
            r"invalid_client\): check datacenters\.SF\.sasl\.client_id and "
            r"datacenters\.SF\.sasl\.client_secret \(read from \$\{AA_TEST_SF_OAUTH_SECRET\}\)",
        ),
        (
            "token-endpoint-down",
            r"DC SF: the token endpoint http://127\.0\.0\.1:1/token cannot be reached .*: check "
            r"datacenters\.SF\.sasl\.token_endpoint",
        ),
    ],
)
async def test_oauth_mistake_is_one_clear_error(
    secure_peers: SecurePeers,
    secret: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unique_name: Callable[[str], str],
    case: str,
    message: str,
) -> None:
    sf = _dc(secure_peers, secure_peers.sf.sasl_plaintext)
    if case == "expired-token":
        sf["sasl"]["client_id"] = EXPIRED_CLIENT
    elif case == "wrong-client-secret":
        monkeypatch.setenv("AA_TEST_SF_OAUTH_SECRET", "wrong-" + secret)
        sf = _dc(secure_peers, secure_peers.sf.sasl_plaintext, env="AA_TEST_SF_OAUTH_SECRET")
    else:
        sf["sasl"]["token_endpoint"] = "http://127.0.0.1:1/token"
    nyc = _dc(secure_peers, secure_peers.nyc.sasl_plaintext)
    config = str(write_topology(tmp_path / "t.yaml", unique_name("t"), sf, nyc))
    await one_clear_error(config, message, [secret], case)
