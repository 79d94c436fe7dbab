"""aiokafka client settings for one DC, and a first connection that explains what is wrong.

:func:`client_kwargs` turns a :class:`Datacenter` into the keyword arguments every aiokafka
client (consumer, producer, admin) accepts. :func:`preflight` opens one connection with them,
so that a wrong password, an untrusted certificate or a mismatched listener is reported once,
naming the DC and the fix, before a command starts work (and before `aa run`'s supervisor
could turn it into a restart loop).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Mapping
from typing import Any

from aa.config.kerberos import kerberos_login
from aa.config.model import Datacenter
from aa.config.tls import ssl_context
from aa.config.tokens import TokenError, hook_provider, token_provider
from aa.errors import AaError

__all__ = [  # hook_provider: the OAUTHBEARER hook, also reached from here
    "ClientSettings",
    "ConnectionSetupError",
    "client_kwargs",
    "explain",
    "hook_provider",
    "preflight",
    "token_provider",
]


class ConnectionSetupError(AaError):
    """A DC's cluster refused aa's connection (TLS, SASL, listener): the message names the DC,
    what the broker or TLS said, and which setting to fix. Never contains a secret."""


SECRET_KWARGS = frozenset({"sasl_plain_password"})
"""Client settings whose values are secrets: masked in :class:`ClientSettings`' repr."""


class ClientSettings(dict[str, Any]):
    """aiokafka keyword arguments whose ``repr`` masks the secret values (a
    :class:`~aa.mirror.settings.FlowSettings` holds two, and reprs end up in logs)."""

    def __repr__(self) -> str:
        shown = {k: "**********" if k in SECRET_KWARGS else v for k, v in self.items()}
        return f"ClientSettings({shown!r})"

    __str__ = __repr__


def client_kwargs(dc: Datacenter, *, env: Mapping[str, str] | None = None) -> ClientSettings:
    """``bootstrap_servers``, ``security_protocol`` and the SSL/SASL settings of ``dc``.

    The SASL password is revealed here (``${VAR}`` and ``${file:PATH}`` references read from
    ``env``, default the process environment, and the file system), so call this where the
    client is built; the result's ``repr`` masks it.
    """
    out = ClientSettings(
        {
            "bootstrap_servers": dc.bootstrap,
            "security_protocol": dc.security_protocol,
        }
    )
    if dc.security_protocol in ("SSL", "SASL_SSL"):
        out["ssl_context"] = ssl_context(dc, env)
    if not dc.security_protocol.startswith("SASL_"):
        return out
    out["sasl_mechanism"] = dc.sasl_mechanism
    if dc.sasl_mechanism in ("OAUTHBEARER", "AWS_MSK_IAM"):
        out["sasl_mechanism"] = "OAUTHBEARER"  # MSK IAM rides on OAUTHBEARER
        out["sasl_oauth_token_provider"] = token_provider(dc, env)
    elif dc.sasl_mechanism == "GSSAPI":
        out["sasl_kerberos_service_name"] = dc.sasl_kerberos_service_name
        kerberos_login(dc)
    else:
        assert dc.sasl_password is not None  # validated when loaded
        out["sasl_plain_username"] = dc.sasl_username
        out["sasl_plain_password"] = dc.sasl_password.reveal(env)
    return out


# -- preflight --------------------------------------------------------------------------------


def _where_password(dc: Datacenter) -> str:
    """Where the password comes from, for a message: references only, never the value."""
    if dc.sasl_password is None:
        return f"datacenters.{dc.name}.sasl.password"
    refs = [f"${{{name}}}" for name in dc.sasl_password.references]
    refs += [f"file {path}" for path in dc.sasl_password.files]
    source = f" (read from {', '.join(refs)})" if refs else ""
    return f"datacenters.{dc.name}.sasl.password{source}"


def _sasl_refused(dc: Datacenter, head: str, broker_says: str) -> ConnectionSetupError:
    """The broker refused aa's SASL credentials: what to check depends on the mechanism."""
    sasl = f"datacenters.{dc.name}.sasl"
    what = f"{head}: SASL {dc.sasl_mechanism} authentication"
    if dc.sasl_mechanism == "GSSAPI":
        who = dc.sasl_principal or "the principal in the ticket cache"
        fix = f"check {sasl}.principal and {sasl}.keytab, and the broker's Kerberos setup"
        return ConnectionSetupError(
            f"{what} as {who} failed (the broker says: {broker_says}): {fix}"
        )
    if dc.sasl_mechanism in ("OAUTHBEARER", "AWS_MSK_IAM"):
        source = (
            "AWS MSK IAM (AWS credentials and region)"
            if dc.sasl_mechanism == "AWS_MSK_IAM"
            else f"{sasl}.token_endpoint (client {dc.sasl_client_id!r})"
            if dc.sasl_token_endpoint
            else f"{sasl}.token_provider"
        )
        return ConnectionSetupError(
            f"{what} failed (the broker says: {broker_says}): the broker refused the token from "
            f"{source}: check that it is not expired and that its issuer, audience and "
            "signing key are the ones the broker expects"
        )
    return ConnectionSetupError(
        f"{what} as {dc.sasl_username!r} failed (the broker says: {broker_says}): check "
        f"{sasl}.username and {_where_password(dc)}, and that the user exists for "
        f"{dc.sasl_mechanism} on the cluster"
    )


def _refused_certificate(dc: Datacenter, reason: str) -> str:
    mine = _client_certificate(dc)
    if mine:
        fix = f"it does not accept {mine}: use a certificate signed by a CA its truststore trusts"
    else:
        fix = (
            f"it requires one: set datacenters.{dc.name}.ssl.certfile and keyfile (or ssl.keystore)"
        )
    return f"the broker refused aa's TLS client certificate ({reason}): {fix}"


def _client_certificate(dc: Datacenter) -> str:
    ssl_field = f"datacenters.{dc.name}.ssl"
    if dc.ssl_certfile:
        return f"{ssl_field}.certfile {dc.ssl_certfile}"
    if dc.ssl_keystore:
        return f"{ssl_field}.keystore {dc.ssl_keystore}"
    return ""


def explain(dc: Datacenter, address: str, exc: BaseException) -> ConnectionSetupError | None:
    """A clear error for a connection failure caused by security settings, else ``None``."""
    from aiokafka.errors import (
        KafkaConnectionError,
        SaslAuthenticationFailed,
        UnsupportedSaslMechanismError,
    )

    head = f"DC {dc.name} ({address}, {dc.security_protocol})"
    ca = dc.ssl_cafile or dc.ssl_truststore or "the system's default CAs"
    if isinstance(exc, TokenError):
        return ConnectionSetupError(str(exc))
    if isinstance(exc, SaslAuthenticationFailed):
        return _sasl_refused(dc, head, str(exc).split(": ", 1)[-1] or "authentication failed")
    if isinstance(exc, UnsupportedSaslMechanismError):
        return ConnectionSetupError(
            f"{head}: the broker's listener does not offer SASL {dc.sasl_mechanism} "
            f"({str(exc).split(': ', 1)[-1]}): fix datacenters.{dc.name}.sasl.mechanism, or "
            f"datacenters.{dc.name}.bootstrap for a listener that offers it"
        )
    if type(exc).__module__.startswith("gssapi"):
        why = " ".join(str(getattr(exc, "gen_message", lambda: exc)()).split())
        return ConnectionSetupError(
            f"{head}: Kerberos could not get a ticket for the broker ({why}): check "
            f"datacenters.{dc.name}.sasl.kerberos_service_name "
            f"({dc.sasl_kerberos_service_name}; the broker's principal is "
            f"{dc.sasl_kerberos_service_name}/<host>@REALM), and that aa's credentials are valid "
            "(kinit, or sasl.keytab and sasl.principal)"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or exc.reason or str(exc)
        fix = (
            f"use a certificate whose names include the host in datacenters.{dc.name}.bootstrap"
            if "hostname" in why.lower() or "ip address mismatch" in why.lower()
            else f"set datacenters.{dc.name}.ssl.cafile (or truststore) to the CA that signed "
            "the broker's certificate"
        )
        return ConnectionSetupError(
            f"{head}: the broker's TLS certificate is not trusted ({why}; trusted: {ca}): {fix}"
        )
    reason = str(getattr(exc, "reason", "") or exc)
    refused_alert = any(a in reason.upper() for a in ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE"))
    if refused_alert or (
        isinstance(exc, KafkaConnectionError) and dc.security_protocol == "SSL"
    ):  # a broker refuses a client certificate by an alert or by closing after the handshake
        return ConnectionSetupError(f"{head}: {_refused_certificate(dc, reason)}")
    if isinstance(exc, ssl.SSLError):
        return ConnectionSetupError(
            f"{head}: the TLS handshake failed ({exc.reason or exc}): check that "
            f"datacenters.{dc.name}.security_protocol matches the broker's listener at {address}"
        )
    if isinstance(exc, KafkaConnectionError) and dc.security_protocol != "PLAINTEXT":
        return ConnectionSetupError(
            f"{head}: the broker closed the connection during the "
            f"{'TLS/' if 'SSL' in dc.security_protocol else ''}SASL handshake: check that "
            f"datacenters.{dc.name}.security_protocol and sasl.mechanism match the broker's "
            f"listener at {address}"
            + (
                f", and that it accepts aa's client certificate ({_client_certificate(dc)})"
                if _client_certificate(dc)
                else ""
            )
        )
    return None


async def preflight(dcs: Iterable[Datacenter], *, timeout_s: float = 30.0) -> None:
    """Open one connection to each DC's first reachable bootstrap server with aa's settings.

    Raises :class:`ConnectionSetupError` when TLS or SASL refuse it, or when two DCs reach the
    same cluster (its id, from a metadata request on that connection). A server that does not
    answer at all is left to the command's own handling (it may be down for a moment).
    """
    from aa.kafka.connection import connect

    clusters: dict[str, str] = {}  # cluster id -> the first DC seen reaching it
    for dc in dcs:
        kwargs = client_kwargs(dc)
        for server in dc.bootstrap.split(","):
            host, _, port = server.strip().rpartition(":")
            try:
                conn = await asyncio.wait_for(
                    connect(
                        host,
                        int(port),
                        request_timeout_ms=int(timeout_s * 1000),
                        ssl_context=kwargs.get("ssl_context"),
                        security_protocol=dc.security_protocol,
                        sasl_mechanism=kwargs.get("sasl_mechanism", "PLAIN"),
                        sasl_plain_username=kwargs.get("sasl_plain_username"),
                        sasl_plain_password=kwargs.get("sasl_plain_password"),
                        sasl_oauth_token_provider=kwargs.get("sasl_oauth_token_provider"),
                        sasl_kerberos_service_name=kwargs.get(
                            "sasl_kerberos_service_name", "kafka"
                        ),
                    ),
                    timeout_s,
                )
            except Exception as exc:  # noqa: BLE001 - classified below, else left to the command
                explained = explain(dc, server.strip(), exc)
                if explained is not None:
                    raise explained from None
                continue
            try:
                bearer = kwargs.get("sasl_mechanism") == "OAUTHBEARER"
                cluster = await _cluster_id(conn, timeout_s, bearer=bearer)
            except _TokenRefused:
                head = f"DC {dc.name} ({server.strip()}, {dc.security_protocol})"
                raise _sasl_refused(dc, head, "invalid_token") from None
            finally:
                conn.close()
            other = clusters.setdefault(cluster, dc.name) if cluster else dc.name
            if other != dc.name:
                raise ConnectionSetupError(
                    f"datacenters.{other} and datacenters.{dc.name} reach the same Kafka cluster "
                    f"(cluster id {cluster}): each DC is its own cluster, or its records would "
                    f"be copied twice under two origins; fix datacenters.{other}.bootstrap or "
                    f"datacenters.{dc.name}.bootstrap ({dc.bootstrap})"
                )
            break


class _TokenRefused(Exception):
    """Internal signal of :func:`_cluster_id`; never escapes :func:`preflight`."""


async def _cluster_id(conn: Any, timeout_s: float, *, bearer: bool) -> str | None:
    """The id of the cluster behind an open connection (``None``: no answer says it).

    A broker refuses an OAUTHBEARER token by answering the SASL exchange with an error status,
    which aiokafka takes for success; the broker then answers the next request with nothing (a
    metadata response without brokers): :class:`_TokenRefused`."""
    from aa.kafka.connection import metadata_request

    try:
        response = await asyncio.wait_for(conn.send(metadata_request()), timeout_s)
    except Exception:  # noqa: BLE001 - the command's own handling reports a DC that does not answer
        return None
    if bearer and not getattr(response, "brokers", None):
        raise _TokenRefused
    cluster = getattr(response, "cluster_id", None)
    return cluster if isinstance(cluster, str) else None
