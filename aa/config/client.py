"""aiokafka client settings for one DC, and a first connection that explains what is wrong.

:func:`client_kwargs` turns a :class:`Datacenter` into the keyword arguments every aiokafka
client (consumer, producer, admin) accepts. :func:`preflight` opens one connection with them,
so that a wrong password, an untrusted certificate or a mismatched listener is reported once,
naming the DC and the fix, before a command starts work (and before `aa run`'s supervisor
could turn it into a restart loop).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aiokafka.abc import AbstractTokenProvider
from aiokafka.helpers import create_ssl_context

from aa.config.model import Datacenter
from aa.errors import AaError, ConfigError


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
        out["ssl_context"] = _ssl_context(dc)
    if dc.security_protocol.startswith("SASL_"):
        out["sasl_mechanism"] = dc.sasl_mechanism
        if dc.sasl_mechanism == "OAUTHBEARER":
            out["sasl_oauth_token_provider"] = token_provider(dc)
        else:
            assert dc.sasl_password is not None  # validated when loaded
            out["sasl_plain_username"] = dc.sasl_username
            out["sasl_plain_password"] = dc.sasl_password.reveal(env)
    return out


def _ssl_context(dc: Datacenter) -> ssl.SSLContext:
    files = (("cafile", dc.ssl_cafile), ("certfile", dc.ssl_certfile), ("keyfile", dc.ssl_keyfile))
    for name, path in files:
        if path is not None and not Path(path).expanduser().is_file():
            raise ConfigError(
                f"DC {dc.name}: datacenters.{dc.name}.ssl.{name} {path} does not exist: fix the "
                "path (or remove the setting to use the system's CAs)"
                if name == "cafile"
                else f"DC {dc.name}: datacenters.{dc.name}.ssl.{name} {path} does not exist: "
                "fix the path"
            )
    try:
        context: ssl.SSLContext = create_ssl_context(
            cafile=dc.ssl_cafile, certfile=dc.ssl_certfile, keyfile=dc.ssl_keyfile
        )
    except ssl.SSLError as exc:
        raise ConfigError(
            f"DC {dc.name}: the TLS files in datacenters.{dc.name}.ssl cannot be loaded "
            f"({exc.reason or exc}): they must be PEM files (cafile: CA certificates; certfile "
            "and keyfile: the client's certificate and its unencrypted private key)"
        ) from None
    return context


# -- OAUTHBEARER ------------------------------------------------------------------------------

TokenSource = Callable[[], str | Awaitable[str]]
"""What a token-provider hook may return: a callable giving the current bearer token."""


class _CallableTokenProvider(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka is untyped
    """Adapts a plain (sync or async) callable to aiokafka's token-provider interface."""

    def __init__(self, source: TokenSource) -> None:
        self._source = source

    async def token(self) -> str:
        value = self._source()
        if inspect.isawaitable(value):
            value = await value
        return value


def token_provider(dc: Datacenter) -> AbstractTokenProvider:
    """The OAUTHBEARER token provider of ``dc``: ``sasl.token_provider`` is ``module:factory``;
    the factory is called with the DC's name and returns an aiokafka ``AbstractTokenProvider``
    or a callable (sync or async) returning the current token, e.g. one that asks the
    identity provider of a managed Kafka service and caches the answer until it expires."""
    ref = dc.sasl_token_provider
    field = f"datacenters.{dc.name}.sasl.token_provider"
    if not ref:
        raise ConfigError(f"DC {dc.name}: {field} is required for OAUTHBEARER: 'module:factory'")
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"DC {dc.name}: {field} {ref!r} must be 'module:factory'")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"DC {dc.name}: {field} {ref!r} cannot be loaded ({type(exc).__name__}: {exc}): "
            "install the module or fix the name"
        ) from None
    made = factory(dc.name)
    if isinstance(made, AbstractTokenProvider):
        return made
    if callable(made):
        return _CallableTokenProvider(made)
    raise ConfigError(
        f"DC {dc.name}: {field} {ref!r} returned {type(made).__name__}: the factory must return "
        "an aiokafka AbstractTokenProvider or a callable giving the token"
    )


# -- preflight --------------------------------------------------------------------------------


def _where_password(dc: Datacenter) -> str:
    """Where the password comes from, for a message: references only, never the value."""
    if dc.sasl_password is None:
        return f"datacenters.{dc.name}.sasl.password"
    refs = [f"${{{name}}}" for name in dc.sasl_password.references]
    refs += [f"file {path}" for path in dc.sasl_password.files]
    source = f" (read from {', '.join(refs)})" if refs else ""
    return f"datacenters.{dc.name}.sasl.password{source}"


def explain(dc: Datacenter, address: str, exc: BaseException) -> ConnectionSetupError | None:
    """A clear error for a connection failure caused by security settings, else ``None``."""
    from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed

    head = f"DC {dc.name} ({address}, {dc.security_protocol})"
    ca = dc.ssl_cafile or "the system's default CAs"
    if isinstance(exc, SaslAuthenticationFailed):
        broker_says = str(exc).split(": ", 1)[-1] or "authentication failed"
        return ConnectionSetupError(
            f"{head}: SASL {dc.sasl_mechanism} authentication as {dc.sasl_username!r} failed "
            f"(the broker says: {broker_says}): check datacenters.{dc.name}.sasl.username and "
            f"{_where_password(dc)}, and that the user exists for {dc.sasl_mechanism} on the "
            "cluster"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or exc.reason or str(exc)
        fix = (
            f"use a certificate whose names include the host in datacenters.{dc.name}.bootstrap"
            if "hostname" in why.lower() or "ip address mismatch" in why.lower()
            else f"set datacenters.{dc.name}.ssl.cafile to the CA that signed the broker's "
            "certificate"
        )
        return ConnectionSetupError(
            f"{head}: the broker's TLS certificate is not trusted ({why}; trusted: {ca}): {fix}"
        )
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
        )
    return None


async def preflight(dcs: Iterable[Datacenter], *, timeout_s: float = 30.0) -> None:
    """Open one connection to each DC's first reachable bootstrap server with aa's settings.

    Raises :class:`ConnectionSetupError` when TLS or SASL refuse it, or when two DCs reach the
    same cluster (its id, from a metadata request on that connection). A server that does not
    answer at all is left to the command's own handling (it may be down for a moment).
    """
    from aiokafka.conn import create_conn

    clusters: dict[str, str] = {}  # cluster id -> the first DC seen reaching it
    for dc in dcs:
        kwargs = client_kwargs(dc)
        for server in dc.bootstrap.split(","):
            host, _, port = server.strip().rpartition(":")
            try:
                conn = await asyncio.wait_for(
                    create_conn(
                        host,
                        int(port),
                        request_timeout_ms=int(timeout_s * 1000),
                        ssl_context=kwargs.get("ssl_context"),
                        security_protocol=dc.security_protocol,
                        sasl_mechanism=kwargs.get("sasl_mechanism", "PLAIN"),
                        sasl_plain_username=kwargs.get("sasl_plain_username"),
                        sasl_plain_password=kwargs.get("sasl_plain_password"),
                        sasl_oauth_token_provider=kwargs.get("sasl_oauth_token_provider"),
                    ),
                    timeout_s,
                )
            except Exception as exc:  # noqa: BLE001 - classified below, else left to the command
                explained = explain(dc, server.strip(), exc)
                if explained is not None:
                    raise explained from None
                continue
            try:
                cluster = await _cluster_id(conn, timeout_s)
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


async def _cluster_id(conn: Any, timeout_s: float) -> str | None:
    """The id of the cluster behind an open connection (``None``: no answer to say it)."""
    from aiokafka.protocol.metadata import MetadataRequest

    try:
        response = await asyncio.wait_for(conn.send(MetadataRequest([])), timeout_s)
    except Exception:  # noqa: BLE001 - the command's own handling reports a DC that does not answer
        return None
    cluster = getattr(response, "cluster_id", None)
    return cluster if isinstance(cluster, str) else None
