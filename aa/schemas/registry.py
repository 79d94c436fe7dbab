"""A small async client of Confluent's Schema Registry REST API: what copying a schema from
one registry into another needs, no more.

Every answer is one of three things: the JSON asked for; :class:`RegistryRefused` (a 4xx
other than authentication: the registry understood and says no, e.g. 404 "schema not found",
409 "incompatible", 422 "invalid schema"), which no retry changes; or
:class:`RegistryUnavailable` (no answer in time, a connection refused, a 5xx, or 401/403/429),
which waiting may cure. Messages name the registry by its role and URL, never a credential.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from aa.config.secret import Secret
from aa.errors import AaError
from aa.lifecycle import AsyncResource

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TIMEOUT_S = 10.0
"""One request's deadline: a registry that takes longer is taken for away."""
_WAIT = frozenset({401, 403, 408, 429})
"""4xx answers that may change without aa: credentials or permissions fixed, throttling."""


class RegistryUnavailable(AaError):
    """The registry did not answer usefully; copying waits for it."""


class RegistryRefused(AaError):
    """The registry answered no (a 4xx); ``role`` says which (``source``, ``target``),
    ``status`` and ``code`` are its HTTP status and ``error_code``."""

    def __init__(self, message: str, *, role: str, status: int, code: int | None) -> None:
        super().__init__(message)
        self.role, self.status, self.code = role, status, code


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema a schema refers to (an Avro named type, a Protobuf import): by subject and
    version in its registry; ``name`` is how the referring schema names it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class Schema:
    """A schema as a registry holds it: its text, type and references."""

    text: str
    type: str = "AVRO"
    references: tuple[Reference, ...] = ()

    @classmethod
    def of(cls, answer: dict[str, Any]) -> Schema:
        refs = tuple(
            Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
            for r in answer.get("references") or ()
        )
        return cls(str(answer["schema"]), str(answer.get("schemaType") or "AVRO"), refs)

    def body(self) -> dict[str, Any]:
        """The request body that registers it (Avro's type is implied, as Confluent writes)."""
        out: dict[str, Any] = {"schema": self.text}
        if self.type != "AVRO":
            out["schemaType"] = self.type
        if self.references:
            out["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in self.references
            ]
        return out


class Registry(AsyncResource):
    """One registry: ``role`` says which (``source`` or ``target``) in messages and in the
    settings to check (``schemas.<role>.*``)."""

    def __init__(
        self,
        role: str,
        url: str,
        *,
        username: str | None = None,
        password: Secret | None = None,
        cafile: str | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.role, self.url = role, url.rstrip("/")
        self._username, self._password, self._cafile = username, password, cafile
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)

    _session: aiohttp.ClientSession

    async def _open(self) -> None:
        auth = None
        if self._username is not None and self._password is not None:
            auth = aiohttp.BasicAuth(self._username, self._password.reveal())
        tls = ssl.create_default_context(cafile=self._cafile) if self._cafile else None
        self._session = aiohttp.ClientSession(
            auth=auth,
            timeout=self._timeout,
            headers={"Accept": f"{CONTENT_TYPE}, application/json"},
            connector=aiohttp.TCPConnector(ssl=tls if tls is not None else True),
        )

    async def _close(self) -> None:
        await self._session.close()

    @property
    def name(self) -> str:
        return f"the {self.role} schema registry ({self.url})"

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"Content-Type": CONTENT_TYPE} if body is not None else None
        try:
            async with self._session.request(
                method, self.url + path, json=body, headers=headers
            ) as response:
                status, text = response.status, await response.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RegistryUnavailable(f"{self.name} does not answer ({exc!r})") from None
        answer = _json(text)
        if status < 300:
            return answer
        message = answer.get("message") if isinstance(answer, dict) else None
        said = f"{status} {message or text[:200]!r}"
        if status >= 500 or status in _WAIT:
            fix = (
                f"; check schemas.{self.role}.username and password" if status in (401, 403) else ""
            )
            raise RegistryUnavailable(f"{self.name} answered {method} {path}: {said}{fix}")
        code = answer.get("error_code") if isinstance(answer, dict) else None
        raise RegistryRefused(
            f"{self.name} refused {method} {path}: {said}",
            role=self.role,
            status=status,
            code=code if isinstance(code, int) else None,
        )

    async def schema(self, schema_id: int) -> Schema:
        """The schema with id ``schema_id``."""
        return Schema.of(await self._call("GET", f"/schemas/ids/{schema_id}"))

    async def holders(self, schema_id: int) -> list[tuple[str, int]]:
        """Every (subject, version) whose schema has id ``schema_id``."""
        answer = await self._call("GET", f"/schemas/ids/{schema_id}/versions")
        return [(str(a["subject"]), int(a["version"])) for a in answer]

    async def version(self, subject: str, version: int) -> Schema:
        return Schema.of(await self._call("GET", f"/subjects/{_q(subject)}/versions/{version}"))

    async def has_subject(self, subject: str) -> bool:
        try:
            await self._call("GET", f"/subjects/{_q(subject)}/versions")
        except RegistryRefused as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def register(self, subject: str, schema: Schema) -> int:
        """The id of ``schema`` under ``subject``, registering it as the subject's next version
        unless it is one already (the same schema gets the same id: idempotent)."""
        answer = await self._call("POST", f"/subjects/{_q(subject)}/versions", schema.body())
        return int(answer["id"])

    async def version_of(self, subject: str, schema: Schema) -> int:
        """The version ``schema`` has under ``subject`` (it must be registered there)."""
        answer = await self._call("POST", f"/subjects/{_q(subject)}", schema.body())
        return int(answer["version"])

    async def compatibility(self, subject: str | None) -> str | None:
        """The subject's own compatibility level, ``None`` when it has none (the registry's
        global level applies); the global level when ``subject`` is ``None``."""
        path = "/config" if subject is None else f"/config/{_q(subject)}?defaultToGlobal=false"
        try:
            answer = await self._call("GET", path)
        except RegistryRefused as exc:
            if exc.status == 404:
                return None
            raise
        level = answer.get("compatibilityLevel") or answer.get("compatibility")
        return str(level) if level else None

    async def set_compatibility(self, subject: str, level: str) -> None:
        await self._call("PUT", f"/config/{_q(subject)}", {"compatibility": level})


def _q(subject: str) -> str:
    return quote(subject, safe="")


def _json(text: str) -> Any:
    try:
        return orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return {}
