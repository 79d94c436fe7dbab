"""A DC's ``ssl`` and ``sasl`` settings: which go together, read from what the user wrote.

Each setting is declared once on :class:`~aa.config.model.Datacenter`; this module knows the
rules that span settings: TLS files only with SSL, PEM files or Java stores but not both for
one role, and for each SASL mechanism the settings it needs and those it does not use.
Every error names the field the user wrote and what would be right.
"""

from __future__ import annotations

from typing import Any

from aa.config.fields import Field, get, require
from aa.config.model import Datacenter
from aa.config.schema import settings_of

_DC = {d.name: d for d in settings_of(Datacenter)}
SSL_FIELDS = tuple(d.key.split(".", 1)[1] for d in _DC.values() if d.key.startswith("ssl."))
SASL_FIELDS = tuple(d.key.split(".", 1)[1] for d in _DC.values() if d.key.startswith("sasl."))

_OAUTH_CREDENTIALS = ("token_endpoint", "client_id", "client_secret")
MECHANISM_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # mechanism: (required, optional) sasl fields besides `mechanism`
    "PLAIN": (("username", "password"), ()),
    "SCRAM-SHA-256": (("username", "password"), ()),
    "SCRAM-SHA-512": (("username", "password"), ()),
    "OAUTHBEARER": (
        (),
        ("token_provider", "token_endpoint", "client_id", "client_secret", "scope"),
    ),
    "GSSAPI": ((), ("kerberos_service_name", "keytab", "principal")),
    "AWS_MSK_IAM": ((), ()),
}
"""What each mechanism reads; any other sasl field given with it is an error."""


def _read(attr: str, node: Field) -> Any:
    return _DC[attr].setting.kind.read(node)


def read_ssl(node: Field, fields: dict[str, Field], proto: str) -> dict[str, Any]:
    """The ``ssl_*`` attributes of the DC at ``node``."""
    ssl_f = get(fields, "ssl", node)
    ssl = ssl_f.mapping(SSL_FIELDS) if ssl_f else {}
    if not ssl:
        return {}
    assert ssl_f is not None
    if proto not in ("SSL", "SASL_SSL"):
        raise ssl_f.error(f"ssl settings given but security_protocol is {proto}", "SSL or SASL_SSL")
    out = {f"ssl_{k}": _read(f"ssl_{k}", f) for k, f in ssl.items() if f.value is not None}
    for pem, store in (("cafile", "truststore"), ("certfile", "keystore")):
        if f"ssl_{pem}" in out and f"ssl_{store}" in out:
            raise ssl[store].error(
                f"both {pem} and {store} given", f"one of them: {pem} (PEM) or {store} (JKS/PKCS12)"
            )
    if "ssl_keyfile" in out and "ssl_certfile" not in out:
        raise ssl["keyfile"].error("keyfile without certfile", "certfile, or certfile+keyfile")
    for store in ("truststore", "keystore"):
        if f"ssl_{store}_password" in out and f"ssl_{store}" not in out:
            raise ssl[f"{store}_password"].error(f"given without {store}", f"{store}: <path>")
    if "ssl_key_password" in out and not (
        {"ssl_keyfile", "ssl_certfile", "ssl_keystore"} & set(out)
    ):
        raise ssl["key_password"].error(
            "given without a key", "certfile/keyfile or keystore with it"
        )
    return out


def read_sasl(node: Field, fields: dict[str, Field], proto: str) -> dict[str, Any]:
    """The ``sasl_*`` attributes of the DC at ``node``."""
    sasl_f = get(fields, "sasl", node)
    sasl = sasl_f.mapping(SASL_FIELDS) if sasl_f else {}
    if not proto.startswith("SASL_"):
        if sasl:
            assert sasl_f is not None
            raise sasl_f.error(
                f"sasl settings given but security_protocol is {proto}",
                "SASL_PLAINTEXT or SASL_SSL",
            )
        return {}
    if sasl_f is None:
        raise Field(node.file, f"{node.path}.sasl", None).error(
            f"missing: security_protocol {proto} needs sasl settings",
            "{mechanism, ...} (docs/configuration.md, a section per mechanism)",
        )
    mechanism = _read("sasl_mechanism", require(sasl, "mechanism", sasl_f))
    needed, optional = MECHANISM_FIELDS[mechanism]
    for key, f in sasl.items():
        if key != "mechanism" and key not in needed + optional and f.value is not None:
            uses = ", ".join(needed + optional) or "nothing else"
            raise f.error(f"not used with {mechanism}", f"with {mechanism}: {uses}")
    out: dict[str, Any] = {"sasl_mechanism": mechanism}
    for key in needed:
        out[f"sasl_{key}"] = _read(f"sasl_{key}", require(sasl, key, sasl_f))
    for key in optional:
        if (opt := get(sasl, key, sasl_f)) is not None:
            out[f"sasl_{key}"] = _read(f"sasl_{key}", opt)
    if mechanism == "OAUTHBEARER":
        _oauth(sasl, sasl_f, out)
    if mechanism == "GSSAPI" and ("sasl_keytab" in out) != ("sasl_principal" in out):
        given, other = ("keytab", "principal") if "sasl_keytab" in out else ("principal", "keytab")
        raise sasl[given].error(
            f"{given} without {other}",
            "both (aa logs in from the keytab), or neither (the ticket cache kinit filled)",
        )
    return out


def _oauth(sasl: dict[str, Field], sasl_f: Field, out: dict[str, Any]) -> None:
    """OAUTHBEARER: a token hook, or client credentials for a token endpoint; not both."""
    allowed = "token_provider: 'module:factory', or token_endpoint, client_id and client_secret"
    credentials = [k for k in (*_OAUTH_CREDENTIALS, "scope") if f"sasl_{k}" in out]
    if "sasl_token_provider" in out:
        if credentials:
            raise sasl[credentials[0]].error("not used with token_provider", allowed)
        return
    if not credentials:
        raise sasl_f.child("token_provider", None).error("missing", allowed)
    for key in _OAUTH_CREDENTIALS:
        require(sasl, key, sasl_f)
    url = out["sasl_token_endpoint"]
    if not url.startswith(("http://", "https://")):
        raise sasl["token_endpoint"].error(f"{url!r} is not an http(s) URL", "https://host/path")
