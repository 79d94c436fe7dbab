"""Client security settings without a broker: secret references, TLS file checks, the
OAUTHBEARER token-provider hook and the messages a refused connection turns into."""

from __future__ import annotations

import ssl
import sys
import types
from pathlib import Path

import pytest
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed

from aa.config import Datacenter, Secret, read_yaml
from aa.config.client import client_kwargs, explain, token_provider
from aa.errors import ConfigError

pytestmark = pytest.mark.unit

SECRET = "s3cr3t-Value-never-printed"


def _dc(**kw: object) -> Datacenter:
    base: dict[str, object] = {
        "name": "SF",
        "bootstrap": "127.0.0.1:9093",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_username": "alice",
        "sasl_password": Secret("${SF_PW}", where="t.yaml: datacenters.SF.sasl.password"),
    }
    base.update(kw)
    return Datacenter(**base)  # type: ignore[arg-type]


def test_secret_from_a_file_is_read_when_revealed(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text(SECRET + "\n")
    s = Secret(f"${{file:{f}}}", where="t.yaml: x")
    assert s.reveal({}) == SECRET
    assert s.files == (str(f),)
    assert s.references == ()
    assert SECRET not in repr(s)
    assert SECRET not in str(s)
    f.write_text("rotated")
    assert s.reveal({}) == "rotated"  # read on every reveal: a rotated file is picked up


def test_missing_secret_file_names_the_field_and_the_fix(tmp_path: Path) -> None:
    s = Secret(f"${{file:{tmp_path / 'nope'}}}", where="t.yaml: datacenters.SF.sasl.password")
    with pytest.raises(ConfigError, match=r"datacenters.SF.sasl.password: secret file .*nope"):
        s.reveal({})


def test_secret_from_env_and_a_password_in_the_file(tmp_path: Path) -> None:
    assert _dc().sasl_password.reveal({"SF_PW": SECRET}) == SECRET  # type: ignore[union-attr]
    kw = client_kwargs(_dc(), env={"SF_PW": SECRET})
    assert kw["sasl_plain_password"] == SECRET
    assert SECRET not in repr(_dc())


def test_yaml_with_file_secret_and_oauth(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text(SECRET)
    cfg = tmp_path / "t.yaml"
    cfg.write_text(
        "datacenters:\n"
        "  SF:\n"
        "    bootstrap: 127.0.0.1:9093\n"
        "    security_protocol: SASL_PLAINTEXT\n"
        f"    sasl: {{mechanism: SCRAM-SHA-512, username: alice, password: '${{file:{pw}}}'}}\n"
        "  NYC:\n"
        "    bootstrap: 127.0.0.1:9094\n"
        "    security_protocol: SASL_PLAINTEXT\n"
        "    sasl: {mechanism: OAUTHBEARER, token_provider: 'my_tokens:provider'}\n"
    )
    topo = read_yaml(cfg.read_text(), str(cfg))
    assert client_kwargs(topo.datacenter("SF"))["sasl_plain_password"] == SECRET
    assert topo.datacenter("NYC").sasl_token_provider == "my_tokens:provider"
    assert SECRET not in repr(topo)


@pytest.mark.parametrize(
    ("sasl", "message"),
    [
        (
            "{mechanism: OAUTHBEARER, username: a, token_provider: 'm:f'}",
            r"sasl.username: not used with OAUTHBEARER",
        ),
        ("{mechanism: OAUTHBEARER}", r"sasl.token_provider: missing"),
        (
            "{mechanism: PLAIN, username: a, password: b, token_provider: 'm:f'}",
            r"sasl.token_provider: not used with PLAIN; allowed: with PLAIN: username, password",
        ),
    ],
)
def test_oauth_config_errors_name_the_field(tmp_path: Path, sasl: str, message: str) -> None:
    cfg = tmp_path / "t.yaml"
    cfg.write_text(
        "datacenters:\n"
        f"  SF: {{bootstrap: 'h:1', security_protocol: SASL_SSL, sasl: {sasl}}}\n"
        "  NYC: 'h:2'\n"
    )
    with pytest.raises(ConfigError, match=message):
        read_yaml(cfg.read_text(), str(cfg))


class _Provider(AbstractTokenProvider):  # type: ignore[misc]
    async def token(self) -> str:
        return "from-provider"


@pytest.fixture
def token_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("aa_test_tokens")
    calls: list[str] = []

    def sync_factory(dc: str):  # type: ignore[no-untyped-def]
        calls.append(dc)
        return lambda: f"sync-token-for-{dc}"

    def async_factory(dc: str):  # type: ignore[no-untyped-def]
        async def token() -> str:
            return f"async-token-for-{dc}"

        return token

    mod.sync_factory = sync_factory  # type: ignore[attr-defined]
    mod.async_factory = async_factory  # type: ignore[attr-defined]
    mod.provider = lambda dc: _Provider()  # type: ignore[attr-defined]
    mod.bad = lambda dc: 42  # type: ignore[attr-defined]
    mod.calls = calls  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "aa_test_tokens", mod)
    return mod


def _oauth(ref: str | None) -> Datacenter:
    return _dc(
        sasl_mechanism="OAUTHBEARER",
        sasl_username=None,
        sasl_password=None,
        sasl_token_provider=ref,
    )


@pytest.mark.parametrize(
    ("factory", "token"),
    [
        ("sync_factory", "sync-token-for-SF"),
        ("async_factory", "async-token-for-SF"),
        ("provider", "from-provider"),
    ],
)
async def test_token_provider_hook(
    token_module: types.ModuleType, factory: str, token: str
) -> None:
    kw = client_kwargs(_oauth(f"aa_test_tokens:{factory}"))
    assert kw["sasl_mechanism"] == "OAUTHBEARER"
    assert "sasl_plain_password" not in kw
    provider = kw["sasl_oauth_token_provider"]
    assert isinstance(provider, AbstractTokenProvider)
    assert await provider.token() == token


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("aa_test_tokens", r"must be 'module:factory'"),
        ("aa_test_tokens:nothing", r"cannot be loaded \(AttributeError"),
        ("no_such_module_xyz:f", r"cannot be loaded \(ModuleNotFoundError"),
        ("aa_test_tokens:bad", r"returned int"),
    ],
)
def test_bad_token_provider_names_the_field(
    token_module: types.ModuleType, ref: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=rf"DC SF: datacenters.SF.sasl.token_provider.*{message}"):
        token_provider(_oauth(ref))


def test_missing_ca_file_names_the_dc_and_the_fix(tmp_path: Path) -> None:
    dc = _dc(security_protocol="SASL_SSL", ssl_cafile=str(tmp_path / "ca.pem"))
    with pytest.raises(
        ConfigError, match=r"DC SF: datacenters.SF.ssl.cafile .*ca.pem does not exist: fix the path"
    ):
        client_kwargs(dc, env={"SF_PW": SECRET})


def test_garbage_ca_file_is_a_config_error(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate")
    dc = _dc(security_protocol="SSL", ssl_cafile=str(ca))
    with pytest.raises(ConfigError, match=r"DC SF: the CA certificates in datacenters.SF.ssl"):
        client_kwargs(dc)


def test_explain_wrong_password_names_where_it_came_from() -> None:
    exc = SaslAuthenticationFailed("Authentication failed: invalid credentials")
    err = explain(_dc(), "127.0.0.1:9093", exc)
    assert err is not None
    msg = str(err)
    assert msg.startswith("DC SF (127.0.0.1:9093, SASL_PLAINTEXT): SASL SCRAM-SHA-256")
    assert "'alice'" in msg
    assert "${SF_PW}" in msg


def test_explain_untrusted_certificate() -> None:
    exc = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify")
    exc.verify_message = "self-signed certificate in certificate chain"
    err = explain(_dc(security_protocol="SASL_SSL", ssl_cafile="/x/ca.pem"), "h:1", exc)
    assert err is not None
    assert "not trusted (self-signed certificate in certificate chain; trusted: /x/ca.pem)" in str(
        err
    )
    assert "set datacenters.SF.ssl.cafile (or truststore) to the CA that signed" in str(err)


def test_explain_listener_mismatch_and_plain_refusal() -> None:
    err = explain(_dc(), "h:1", KafkaConnectionError("Connection at h:1 closed"))
    assert err is not None
    assert "security_protocol and sasl.mechanism match" in str(err)
    assert explain(_dc(), "h:1", ConnectionRefusedError(111, "refused")) is None
