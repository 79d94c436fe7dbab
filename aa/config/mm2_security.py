"""The client settings of one cluster in a MirrorMaker 2 file: security protocol, SASL (the
options its JAAS login module reads) and TLS stores, as :mod:`aa.config.mm2` maps them."""

from __future__ import annotations

import re
from typing import Any

from aa.errors import ConfigError

_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
CLIENT_KEYS = (  # the DC settings' MM2 keys (aa.config.model.Datacenter) and two qualifiers
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.kerberos.service.name",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.key.password",
)

_STORE_TYPES = ("JKS", "PKCS12", "PEM")
_SSL_KEYS = {  # MM2 key -> aa's ssl field
    "ssl.truststore.location": "truststore",
    "ssl.truststore.password": "truststore_password",
    "ssl.keystore.location": "keystore",
    "ssl.keystore.password": "keystore_password",
    "ssl.key.password": "key_password",
}
_JAAS_OPTIONS = {  # JAAS login module option -> aa's sasl field, per mechanism
    "PLAIN": {"username": "username", "password": "password"},
    "SCRAM-SHA-256": {"username": "username", "password": "password"},
    "SCRAM-SHA-512": {"username": "username", "password": "password"},
    "OAUTHBEARER": {"clientId": "client_id", "clientSecret": "client_secret", "scope": "scope"},
    "GSSAPI": {"keyTab": "keytab", "principal": "principal"},
    "AWS_MSK_IAM": {},
}


def client(
    c: str, props: dict[str, str], take: Any, file: str, keys: dict[str, str]
) -> dict[str, Any]:
    """The DC's client settings; a cluster-prefixed key overrides the top-level one."""
    vals: dict[str, str] = {}
    where: dict[str, str] = {}
    for key in CLIENT_KEYS:
        where[key] = f"{c}.{key}"
        v = take(f"{c}.{key}")
        if v is None:
            v, where[key] = take(key), key
        if v is not None:
            vals[key] = v.strip()
    dc = f"datacenters.{c}"
    keys[f"{dc}.security_protocol"] = where["security.protocol"]
    keys[f"{dc}.sasl.mechanism"] = where["sasl.mechanism"]
    keys[f"{dc}.sasl"] = where["sasl.jaas.config"]
    keys[f"{dc}.sasl.token_endpoint"] = where["sasl.oauthbearer.token.endpoint.url"]
    keys[f"{dc}.sasl.kerberos_service_name"] = where["sasl.kerberos.service.name"]
    for key, field in _SSL_KEYS.items():
        keys[f"{dc}.ssl.{field}"] = where[key]
    out: dict[str, Any] = {}
    protocol = vals.get("security.protocol", "PLAINTEXT").upper()
    if "security.protocol" in vals:
        out["security_protocol"] = protocol
    # Kafka's Java clients ignore SSL settings without SSL and SASL settings without SASL (a
    # top-level setting may be meant for the other clusters); so do we.
    if "SSL" not in protocol:
        vals = {k: v for k, v in vals.items() if not k.startswith("ssl.")}
    if not protocol.startswith("SASL_"):
        vals = {k: v for k, v in vals.items() if not k.startswith("sasl.")}
    for kind in ("truststore", "keystore"):
        given = vals.get(f"ssl.{kind}.type", "JKS").upper()
        if given not in _STORE_TYPES:  # the file itself says which it is (aa.config.tls)
            raise ConfigError(
                f"{file}: {where[f'ssl.{kind}.type']}: invalid value {given!r}; allowed: "
                + " | ".join(_STORE_TYPES)
            )
    ssl = {field: vals[key] for key, field in _SSL_KEYS.items() if key in vals}
    if ssl:
        out["ssl"] = ssl
    if protocol.startswith("SASL_"):
        out["sasl"] = _sasl(vals)
    return out


def _sasl(vals: dict[str, str]) -> dict[str, str]:
    """A DC's sasl settings from ``sasl.mechanism`` (Kafka's default: GSSAPI), the JAAS
    options that mechanism's login module reads, and the mechanism's own keys."""
    mechanism = vals.get("sasl.mechanism", "GSSAPI").upper()
    sasl: dict[str, str] = {"mechanism": mechanism}
    jaas = dict(_JAAS.findall(vals.get("sasl.jaas.config", "")))
    for option, field in _JAAS_OPTIONS.get(mechanism, {}).items():
        if option in jaas:
            sasl[field] = jaas[option]
    if mechanism == "OAUTHBEARER" and "sasl.oauthbearer.token.endpoint.url" in vals:
        sasl["token_endpoint"] = vals["sasl.oauthbearer.token.endpoint.url"]
    if mechanism == "GSSAPI" and "sasl.kerberos.service.name" in vals:
        sasl["kerberos_service_name"] = vals["sasl.kerberos.service.name"]
    return sasl
