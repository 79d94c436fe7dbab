"""Which ssl and sasl settings go together (aa.config.security), the MM2 keys of each
mechanism (aa.config.mm2_security), and the client settings each mechanism gives aiokafka."""

from __future__ import annotations

from pathlib import Path

import pytest

from aa.config import read_mm2, read_yaml
from aa.config.client import ClientSettings, client_kwargs
from aa.config.tokens import ClientCredentials, _jwt_lifetime
from aa.errors import ConfigError

pytestmark = pytest.mark.unit


def _yaml(dc: str) -> str:
    return f"datacenters:\n  SF: {dc}\n  NYC: 'h:2'\n"


@pytest.mark.parametrize(
    ("dc", "message"),
    [
        (
            "{bootstrap: 'h:1', security_protocol: SSL, ssl: {cafile: a.pem, truststore: t.jks}}",
            r"datacenters\.SF\.ssl\.truststore: both cafile and truststore given",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SSL, ssl: {certfile: c.pem, keystore: k.p12}}",
            r"datacenters\.SF\.ssl\.keystore: both certfile and keystore given",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SSL, ssl: {keystore_password: x}}",
            r"datacenters\.SF\.ssl\.keystore_password: given without keystore",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SSL, ssl: {key_password: x}}",
            r"datacenters\.SF\.ssl\.key_password: given without a key",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: GSSAPI, "
            "keytab: /k}}",
            r"datacenters\.SF\.sasl\.keytab: keytab without principal",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: GSSAPI, "
            "username: u}}",
            r"datacenters\.SF\.sasl\.username: not used with GSSAPI; allowed: with GSSAPI: "
            r"kerberos_service_name, keytab, principal",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: OAUTHBEARER, "
            "token_endpoint: 'https://idp/token', client_id: aa}}",
            r"datacenters\.SF\.sasl\.client_secret: missing",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: OAUTHBEARER, "
            "token_endpoint: 'idp/token', client_id: aa, client_secret: s}}",
            r"datacenters\.SF\.sasl\.token_endpoint: 'idp/token' is not an http\(s\) URL",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: OAUTHBEARER, "
            "token_provider: 'm:f', client_id: aa}}",
            r"datacenters\.SF\.sasl\.client_id: not used with token_provider",
        ),
        (
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: AWS_MSK_IAM, "
            "username: u}}",
            r"datacenters\.SF\.sasl\.username: not used with AWS_MSK_IAM",
        ),
    ],
)
def test_settings_that_do_not_go_together_name_the_field(dc: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_yaml(_yaml(dc), "t.yaml")


def test_secrets_of_every_mechanism_are_masked() -> None:
    topo = read_yaml(
        "datacenters:\n"
        "  SF: {bootstrap: 'h:1', security_protocol: SASL_SSL, ssl: {keystore: k.p12, "
        "keystore_password: KS-pw-1, key_password: KEY-pw-2, truststore: t.jks, "
        "truststore_password: TS-pw-3}, sasl: {mechanism: OAUTHBEARER, "
        "token_endpoint: 'https://idp/t', client_id: aa, client_secret: CS-pw-4}}\n"
        "  NYC: 'h:2'\n",
        "t.yaml",
    )
    text = repr(topo) + str(topo)
    for secret in ("KS-pw-1", "KEY-pw-2", "TS-pw-3", "CS-pw-4"):
        assert secret not in text


def test_client_settings_repr_masks_the_password() -> None:
    kw = ClientSettings(sasl_plain_password="PW-value-9", bootstrap_servers="h:1")
    assert "PW-value-9" not in repr(kw)
    assert "PW-value-9" not in str(kw)
    assert kw["sasl_plain_password"] == "PW-value-9"


def test_mm2_keys_of_each_mechanism() -> None:
    t = read_mm2(
        "clusters = A, B, C, D\n"
        "A.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
        "C.bootstrap.servers = c:1\nD.bootstrap.servers = d:1\n"
        "A->B.enabled = true\n"
        "A.security.protocol = SASL_PLAINTEXT\n"  # no sasl.mechanism: Kafka's default, GSSAPI
        "A.sasl.kerberos.service.name = kafka-sf\n"
        "A.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required "
        'useKeyTab=true keyTab="/etc/aa.keytab" principal="aa@EXAMPLE.COM";\n'
        "B.security.protocol = SSL\n"
        "B.ssl.truststore.location = /etc/trust.jks\nB.ssl.truststore.password = TS\n"
        "B.ssl.keystore.location = /etc/aa.p12\nB.ssl.keystore.type = PKCS12\n"
        "B.ssl.keystore.password = KS\nB.ssl.key.password = KP\n"
        "C.security.protocol = SASL_SSL\nC.sasl.mechanism = OAUTHBEARER\n"
        "C.sasl.oauthbearer.token.endpoint.url = https://idp/token\n"
        "C.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
        ' required clientId="aa" clientSecret="CS" scope="kafka";\n'
        "D.security.protocol = SASL_SSL\nD.sasl.mechanism = AWS_MSK_IAM\n"
        "D.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n",
        "mm2.properties",
    )
    a, b, c, d = (t.datacenter(n) for n in "ABCD")
    assert (a.sasl_mechanism, a.sasl_keytab, a.sasl_principal, a.sasl_kerberos_service_name) == (
        "GSSAPI", "/etc/aa.keytab", "aa@EXAMPLE.COM", "kafka-sf",
    )  # fmt: skip
    assert (b.ssl_truststore, b.ssl_keystore) == ("/etc/trust.jks", "/etc/aa.p12")
    assert b.ssl_truststore_password is not None
    assert b.ssl_truststore_password.reveal({}) == "TS"
    assert b.ssl_key_password is not None
    assert b.ssl_key_password.reveal({}) == "KP"
    assert (c.sasl_token_endpoint, c.sasl_client_id, c.sasl_scope) == (
        "https://idp/token", "aa", "kafka",
    )  # fmt: skip
    assert d.sasl_mechanism == "AWS_MSK_IAM"
    assert "CS" not in repr(c)


def test_gssapi_client_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gssapi", reason="the gssapi package (aa[kerberos]; needs libkrb5-dev)")
    topo = read_yaml(
        _yaml("{bootstrap: 'h:1', security_protocol: SASL_PLAINTEXT, sasl: {mechanism: GSSAPI}}"),
        "t.yaml",
    )
    kw = client_kwargs(topo.datacenter("SF"))
    assert (kw["sasl_mechanism"], kw["sasl_kerberos_service_name"]) == ("GSSAPI", "kafka")


def test_missing_keytab_names_the_field(tmp_path: Path) -> None:
    pytest.importorskip("gssapi", reason="the gssapi package (aa[kerberos]; needs libkrb5-dev)")
    topo = read_yaml(
        _yaml(
            "{bootstrap: 'h:1', security_protocol: SASL_PLAINTEXT, sasl: {mechanism: GSSAPI, "
            f"keytab: {tmp_path / 'no.keytab'}, principal: aa@AA.TEST}}}}"
        ),
        "t.yaml",
    )
    with pytest.raises(
        ConfigError, match=r"DC SF: datacenters\.SF\.sasl\.keytab .*no\.keytab does"
    ):
        client_kwargs(topo.datacenter("SF"))


def test_msk_iam_needs_a_region() -> None:
    pytest.importorskip("aws_msk_iam_sasl_signer", reason="aa[msk-iam]")
    topo = read_yaml(
        _yaml("{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: AWS_MSK_IAM}}"),
        "t.yaml",
    )
    with pytest.raises(ConfigError, match=r"DC SF: .*AWS_MSK_IAM needs the cluster's AWS region"):
        client_kwargs(topo.datacenter("SF"), env={})
    kw = client_kwargs(topo.datacenter("SF"), env={"AWS_REGION": "eu-west-1"})
    assert kw["sasl_mechanism"] == "OAUTHBEARER"  # MSK IAM rides on OAUTHBEARER


def test_client_credentials_provider_is_built_without_fetching() -> None:
    topo = read_yaml(
        _yaml(
            "{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: OAUTHBEARER, "
            "token_endpoint: 'http://127.0.0.1:1/token', client_id: aa, "
            "client_secret: '${AA_CS}'}}"
        ),
        "t.yaml",
    )
    kw = client_kwargs(topo.datacenter("SF"), env={})  # the secret is read at the first fetch
    assert isinstance(kw["sasl_oauth_token_provider"], ClientCredentials)


def test_jwt_lifetime_from_exp() -> None:
    import base64
    import time

    import orjson

    claims = base64.urlsafe_b64encode(orjson.dumps({"exp": int(time.time()) + 100})).rstrip(b"=")
    assert 90 < _jwt_lifetime(f"h.{claims.decode()}.s") <= 100
    assert _jwt_lifetime("opaque") == 3600.0


async def test_msk_iam_provider_signs_caches_and_refreshes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AWS's real signer with made-up credentials (it signs locally): one token per 80% of its
    15-minute lifetime, for the region in AWS_REGION."""
    pytest.importorskip("aws_msk_iam_sasl_signer", reason="aa[msk-iam]")
    from aa.config.tokens import MskIam
    from tests.helpers.msk import signed_request

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAAATESTEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aa-test-secret-" + "key")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    topo = read_yaml(
        _yaml("{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {mechanism: AWS_MSK_IAM}}"),
        "t.yaml",
    )
    provider = MskIam(topo.datacenter("SF"), env={"AWS_REGION": "eu-west-1"})
    now = [1000.0]
    provider._clock = lambda: now[0]
    first = await provider.token()
    assert await provider.token() == first
    assert provider.fetches == 1
    request = signed_request(first)
    assert request["host"] == "kafka.eu-west-1.amazonaws.com"
    assert request["Action"] == "kafka-cluster:Connect"
    assert request["X-Amz-Credential"].startswith("AKIAAATESTEXAMPLE/")
    assert "aa-test-secret-key" not in first
    now[0] += 0.79 * 900
    await provider.token()
    assert provider.fetches == 1
    now[0] += 0.02 * 900
    await provider.token()
    assert provider.fetches == 2


@pytest.mark.parametrize(
    ("sf", "named"),
    [
        ("{security_protocol: SSL, ssl: {truststore: t.jks, keystore: k.p12}}", "ssl.truststore"),
        ("{security_protocol: SASL_PLAINTEXT, sasl: {mechanism: GSSAPI}}", "GSSAPI"),
        ("{security_protocol: SASL_SSL, sasl: {mechanism: AWS_MSK_IAM}}", "AWS_MSK_IAM"),
    ],
)
def test_reconcile_refuses_what_sparks_client_is_not_given(sf: str, named: str) -> None:
    """Spark's Kafka source gets PEM files and PLAIN/SCRAM only: anything else is refused by
    name, never silently left out (a truststore dropped would trust the system's CAs)."""
    from spark_reconcile.source import kafka_options

    topo = read_yaml(_yaml("{bootstrap: 'h:1', " + sf[1:]), "t.yaml")
    with pytest.raises(ConfigError, match=rf"DC SF: aa reconcile cannot use .*{named}"):
        kafka_options(topo.datacenter("SF"))
