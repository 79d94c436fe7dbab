"""Bearer tokens for SASL OAUTHBEARER: the token-provider hook, OAuth client credentials, and
AWS MSK IAM.

aiokafka asks its provider for a token on every new connection (SASL authenticates
connections, not requests). A provider here caches the token and asks for a new one once 80%
of its lifetime has passed (Java's ``sasl.login.refresh.window.factor``), so a connection the
broker closes when the token expires is opened again with a fresh one.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import inspect
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Mapping

import orjson
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaConnectionError

from aa.config.model import Datacenter
from aa.errors import AaError, ConfigError

REFRESH_FACTOR = 0.8
"""A token is used for this share of its lifetime, then a new one is fetched."""
DEFAULT_LIFETIME_S = 3600.0
"""When the identity provider says nothing of the token's lifetime."""
HTTP_TIMEOUT_S = 15.0


class TokenError(AaError, KafkaConnectionError):  # type: ignore[misc]  # aiokafka is untyped
    """A token could not be had: the message names the DC, the field and the fix, never a
    secret. A connection error to aiokafka, which retries it like a broker that is away."""

    def __str__(self) -> str:  # aiokafka's errors put their class name first
        return Exception.__str__(self)


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


def hook_provider(dc: Datacenter) -> AbstractTokenProvider:
    """``sasl.token_provider`` is ``module:factory``; the factory is called with the DC's name
    and returns an aiokafka ``AbstractTokenProvider`` or a callable (sync or async) returning
    the current token, e.g. one that asks the identity provider of a managed Kafka service and
    caches the answer until it expires."""
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


class _Cached(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka is untyped
    """A token fetched in a thread (the fetch blocks), kept until its refresh point."""

    def __init__(self) -> None:
        self._clock: Callable[[], float] = time.monotonic
        self._token: str | None = None
        self._refresh_at = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0
        """How many tokens were fetched (tests and logs)."""

    def _fetch(self) -> tuple[str, float]:
        """A new token and its lifetime in seconds."""
        raise NotImplementedError

    async def token(self) -> str:
        async with self._lock:
            if self._token is None or self._clock() >= self._refresh_at:
                started = self._clock()
                token, lifetime_s = await asyncio.to_thread(self._fetch)
                self._token, self._refresh_at = token, started + REFRESH_FACTOR * lifetime_s
                self.fetches += 1
            return self._token


class ClientCredentials(_Cached):
    """OAuth 2.0 client credentials (RFC 6749, 4.4) at the DC's ``sasl.token_endpoint``, with
    ``client_id`` and ``client_secret`` sent as HTTP Basic authentication, as Kafka's Java
    client does; ``scope`` when given."""

    def __init__(self, dc: Datacenter, env: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._dc = dc
        self._env = env

    def _fetch(self) -> tuple[str, float]:
        dc = self._dc
        assert dc.sasl_token_endpoint  # validated when loaded
        assert dc.sasl_client_id
        assert dc.sasl_client_secret
        secret = dc.sasl_client_secret.reveal(self._env)
        quote = urllib.parse.quote
        basic = base64.b64encode(f"{quote(dc.sasl_client_id)}:{quote(secret)}".encode()).decode()
        form = {"grant_type": "client_credentials"}
        if dc.sasl_scope:
            form["scope"] = dc.sasl_scope
        request = urllib.request.Request(  # noqa: S310 - the URL is checked to be http(s)
            dc.sasl_token_endpoint,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
        )
        where = f"DC {dc.name}: the token endpoint {dc.sasl_token_endpoint}"
        fields = f"datacenters.{dc.name}.sasl"
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:  # noqa: S310
                body = orjson.loads(answer.read())
        except urllib.error.HTTPError as exc:
            said = _said(exc)
            fix = (
                f"check {fields}.client_id and {fields}.client_secret{_refs(dc)}"
                if exc.code in (400, 401, 403)
                else f"check {fields}.token_endpoint"
            )
            raise TokenError(f"{where} refused aa (HTTP {exc.code}{said}): {fix}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            why = getattr(exc, "reason", None) or exc
            raise TokenError(
                f"{where} cannot be reached ({why}): check {fields}.token_endpoint"
            ) from None
        except orjson.JSONDecodeError:
            raise TokenError(
                f"{where} did not answer JSON: check {fields}.token_endpoint"
            ) from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise TokenError(
                f"{where} answered without an access_token: check {fields}.token_endpoint"
            )
        expires_in = body.get("expires_in")
        lifetime = (
            float(expires_in) if isinstance(expires_in, int | float) else _jwt_lifetime(token)
        )
        return token, lifetime


def _refs(dc: Datacenter) -> str:
    """Where the client secret comes from (references only, never the value)."""
    s = dc.sasl_client_secret
    refs = [] if s is None else [f"${{{n}}}" for n in s.references] + [f"file {p}" for p in s.files]
    return f" (read from {', '.join(refs)})" if refs else ""


def _said(exc: urllib.error.HTTPError) -> str:
    """The identity provider's ``error`` (RFC 6749, 5.2), if it answered one."""
    try:
        body = orjson.loads(exc.read()[:4096])
    except (orjson.JSONDecodeError, OSError, ValueError):
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    return (
        f": {error}" if isinstance(error, str) and error.isprintable() and len(error) < 80 else ""
    )


def _jwt_lifetime(token: str) -> float:
    """Seconds until a JWT's ``exp``; the default when the token is not a JWT or has none."""
    try:
        payload = token.split(".")[1]
        claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return max(1.0, float(claims["exp"]) - time.time())
    except (IndexError, KeyError, TypeError, ValueError, orjson.JSONDecodeError):
        return DEFAULT_LIFETIME_S


REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")


class MskIam(_Cached):
    """AWS MSK IAM: a token signed by AWS's ``aws-msk-iam-sasl-signer-python`` (the
    ``aa[msk-iam]`` extra) with the credentials the AWS SDK finds (environment, profile,
    instance role), for the region in ``AWS_REGION``."""

    def __init__(self, dc: Datacenter, env: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._dc = dc
        environ = os.environ if env is None else env
        field = f"datacenters.{dc.name}.sasl.mechanism AWS_MSK_IAM"
        try:
            signer = importlib.import_module("aws_msk_iam_sasl_signer.MSKAuthTokenProvider")
        except ImportError:
            raise ConfigError(
                f"DC {dc.name}: {field} needs AWS's signer: pip install 'aa[msk-iam]'"
            ) from None
        self._generate = signer.generate_auth_token
        region = next((environ[v] for v in REGION_VARIABLES if environ.get(v)), None)
        if region is None:
            raise ConfigError(
                f"DC {dc.name}: {field} needs the cluster's AWS region: set AWS_REGION"
            )
        self.region = region

    def _fetch(self) -> tuple[str, float]:
        try:
            token, expiry_ms = self._generate(self.region)
        except Exception as exc:  # noqa: BLE001 - botocore raises many kinds; all mean "no token"
            raise TokenError(
                f"DC {self._dc.name}: AWS MSK IAM could not sign a token for region "
                f"{self.region} ({type(exc).__name__}: {exc}): check the AWS credentials "
                "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance role)"
            ) from None
        return token, max(1.0, expiry_ms / 1000 - time.time())


def token_provider(dc: Datacenter, env: Mapping[str, str] | None = None) -> AbstractTokenProvider:
    """The OAUTHBEARER token provider of ``dc``: its hook, its client credentials, or MSK IAM."""
    if dc.sasl_mechanism == "AWS_MSK_IAM":
        return MskIam(dc, env)
    if dc.sasl_token_endpoint:
        return ClientCredentials(dc, env)
    return hook_provider(dc)
