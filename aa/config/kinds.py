"""The kinds of value a setting may hold: how each is read from a topology file or from an MM2
properties file, and how the configuration reference describes what it allows.

A kind reads a :class:`~aa.config.fields.Field` (so every error names the file and the path the
user wrote) and raises :class:`~aa.errors.ConfigError` with what is allowed. It knows nothing
about which setting it is used for; :mod:`aa.config.schema` ties kinds to settings.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aa.config import names
from aa.config.fields import Field, get
from aa.config.secret import Secret
from aa.config.topic_filter import TopicFilter
from aa.errors import ConfigError

Take = Callable[[str], str | None]
"""Reads one MM2 key (and marks it used); ``None`` when the file does not set it."""


class Kind:
    """Base: a value read as is."""

    def read(self, node: Field) -> Any:
        return node.value

    def allowed(self) -> str:
        """What the reference says is allowed (Markdown)."""
        return ""

    def from_mm2(self, keys: Sequence[str], take: Take, file: str) -> tuple[Any, dict[str, str]]:
        """The raw value the MM2 ``keys`` give (the first key set wins; later keys are legacy
        spellings), shaped like the YAML value, and which key each part came from (``""`` is
        the value itself). ``(None, {})`` when none is set."""
        for key in keys:
            text = take(key)
            if text is not None:
                return self.mm2_value(text, key, file), {"": key}
        return None, {}

    def mm2_value(self, text: str, key: str, file: str) -> Any:
        return text

    def for_flow(self, value: Any, source: str, target: str) -> Any:
        """The value as one flow uses it."""
        return value


@dataclass(frozen=True, slots=True)
class Integer(Kind):
    lo: int | None = None
    hi: int | None = None

    def read(self, node: Field) -> int:
        return node.integer(lo=self.lo, hi=self.hi)

    def allowed(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"integer {self.lo}..{self.hi}"
        return f"integer ≥ {self.lo}" if self.lo is not None else "integer"


@dataclass(frozen=True, slots=True)
class ReplicationFactor(Kind):
    """Replicas of a topic aa creates: -1 asks the cluster for its own default (KIP-464)."""

    def read(self, node: Field) -> int:
        try:
            value = node.integer()
        except ConfigError:
            raise node.error(f"expected an integer, got {node.value!r}", self.allowed()) from None
        if value != -1 and not 1 <= value <= 32767:
            raise node.error(f"{value} replicas is not a replication factor", self.allowed())
        return value

    def allowed(self) -> str:
        return "-1 (the cluster's `default.replication.factor`) or 1..32767"


@dataclass(frozen=True, slots=True)
class Number(Kind):
    """A number greater than 0 (intervals, in seconds)."""

    def read(self, node: Field) -> float:
        return node.number(positive=True)

    def allowed(self) -> str:
        return "number > 0"


_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3}
_UNITS |= {"kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_rate(text: str) -> float | None:
    """Bytes per second from ``10MB``, ``512KiB``, ``2e6`` or ``0`` (optionally ``/s``);
    ``None`` when it is none of these."""
    m = re.fullmatch(
        r"\s*([0-9]+(?:\.[0-9]*)?(?:e[0-9]+)?)\s*([kmg]i?b|b)?\s*(?:/s)?\s*", text, re.I
    )
    if m is None:
        return None
    return float(m.group(1)) * _UNITS[(m.group(2) or "").lower()]


@dataclass(frozen=True, slots=True)
class Rate(Kind):
    """Bytes per second, 0 or more: a number, or with a unit (``10MB``, ``512KiB``)."""

    def read(self, node: Field) -> float:
        if isinstance(node.value, bool):
            raise node.error(f"expected bytes per second, got {node.value!r}", self.allowed())
        value = parse_rate(str(node.value))
        if value is None:
            raise node.error(f"invalid rate {node.value!r}", self.allowed())
        return value

    def allowed(self) -> str:
        return "bytes per second ≥ 0 (`0`: no limit), e.g. `10MB` or `512KiB`"


@dataclass(frozen=True, slots=True)
class Boolean(Kind):
    def read(self, node: Field) -> bool:
        return node.boolean()

    def allowed(self) -> str:
        return "`true`, `false`"

    def mm2_value(self, text: str, key: str, file: str) -> bool:
        value = text.strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"{file}: {key}: invalid value {text!r}; allowed: true | false")
        return value == "true"


@dataclass(frozen=True, slots=True)
class Choice(Kind):
    options: tuple[str, ...]

    def read(self, node: Field) -> str:
        return node.choice(self.options)

    def allowed(self) -> str:
        return ", ".join(f"`{o}`" for o in self.options)


@dataclass(frozen=True, slots=True)
class Text(Kind):
    """A non-empty string."""

    what: str = "string"

    def read(self, node: Field) -> str:
        return node.text()

    def allowed(self) -> str:
        return self.what


@dataclass(frozen=True, slots=True)
class MaybeText(Text):
    """A non-empty string, or nothing (the setting is off)."""

    def read(self, node: Field) -> str | None:  # type: ignore[override]  # None: not set
        return None if node.value is None else node.text()


@dataclass(frozen=True, slots=True)
class Moment(Kind):
    """A moment in time: ISO 8601 with its zone (``2026-11-24T00:00:00Z``), kept as written in
    UTC (:func:`moment_ms` gives its epoch milliseconds)."""

    def read(self, node: Field) -> str:
        value = node.value
        if isinstance(value, datetime.datetime):  # YAML reads an unquoted timestamp itself
            moment = value
        elif isinstance(value, datetime.date):
            raise node.error(f"{value} is a date without a time and zone", self.allowed())
        else:
            try:
                moment = datetime.datetime.fromisoformat(node.text().replace("Z", "+00:00"))
            except ValueError:
                raise node.error(f"{value!r} is not a time", self.allowed()) from None
        if moment.tzinfo is None:
            raise node.error(f"{value!s} has no time zone", self.allowed())
        return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def allowed(self) -> str:
        return "an ISO 8601 time with its zone, e.g. `2026-11-24T00:00:00Z`"


def moment_ms(text: str) -> int:
    """Epoch milliseconds of a :class:`Moment`'s value."""
    return int(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


_HOST_PORT = re.compile(r"^[^\s:,]+:(\d{1,5})$")


@dataclass(frozen=True, slots=True)
class Servers(Kind):
    """Kafka bootstrap servers: ``host:port[,host:port...]``."""

    def read(self, node: Field) -> str:
        text = node.text()
        for server in text.split(","):
            m = _HOST_PORT.match(server.strip())
            if not m or not 0 < int(m.group(1)) < 65536:
                raise node.error(f"invalid server {server.strip()!r}", "host:port[,host:port...]")
        return text

    def allowed(self) -> str:
        return "`host:port[,host:port...]`"


_URL = re.compile(r"^https?://[^\s/:?#]+(:\d{1,5})?(/[^\s?#]*)?$")


@dataclass(frozen=True, slots=True)
class Url(Kind):
    """An ``http://`` or ``https://`` URL without query or credentials (a trailing ``/`` is
    dropped)."""

    def read(self, node: Field) -> str:
        text = node.text().strip()
        if not _URL.match(text) or "@" in text:
            raise node.error(
                f"invalid URL {text!r}", "http(s)://host[:port][/path], credentials apart"
            )
        return text.rstrip("/")

    def allowed(self) -> str:
        return "`http(s)://host[:port][/path]`"


@dataclass(frozen=True, slots=True)
class Password(Kind):
    """A :class:`~aa.config.secret.Secret`: ``${ENV_VAR}`` / ``${file:/path}`` references are
    resolved only when a client is built; the value is never shown."""

    def read(self, node: Field) -> Secret:
        return Secret(node.text(), where=f"{node.file}: {node.path}")

    def allowed(self) -> str:
        return "string; `${ENV_VAR}` and `${file:/path}` references allowed"


@dataclass(frozen=True, slots=True)
class Separator(Kind):
    """The prefix-mode separator: it must never occur in a DC name, a path or a source."""

    def read(self, node: Field) -> str:
        sep = node.text()
        if any(c.isspace() for c in sep) or any(c in sep for c in ",/"):
            raise node.error(
                f"invalid separator {sep!r}", "a non-empty string without spaces, ',' or '/'"
            )
        return sep

    def allowed(self) -> str:
        return "non-empty, without spaces, `,` or `/`"


@dataclass(frozen=True, slots=True)
class Template(Kind):
    """A topic name in which ``{source}`` / ``{target}`` (those listed) become the flow's DCs."""

    placeholders: tuple[str, ...] = ("source", "target")

    def read(self, node: Field) -> str:
        text = node.text()
        try:
            out = text.format(**dict.fromkeys(self.placeholders, "X"))
        except (KeyError, IndexError, ValueError) as exc:
            allowed = ", ".join("{" + n + "}" for n in self.placeholders)
            raise node.error(f"invalid placeholder in {text!r} ({exc})", allowed) from None
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", out):
            raise node.error(
                f"{text!r} is not a valid topic name", "letters, digits, '.', '_', '-'"
            )
        return text

    def allowed(self) -> str:
        if not self.placeholders:
            return "a topic name"
        return "topic name; may use " + ", ".join(f"`{{{p}}}`" for p in self.placeholders)

    def for_flow(self, value: Any, source: str, target: str) -> Any:
        return names.for_flow(value, source, target)


@dataclass(frozen=True, slots=True)
class StrList(Kind):
    """A list of strings (a single string is a one-element list; MM2: comma-separated)."""

    def read(self, node: Field) -> tuple[str, ...]:
        return node.str_list()

    def allowed(self) -> str:
        return "list of strings"

    def mm2_value(self, text: str, key: str, file: str) -> list[str]:
        return split_list(text)


@dataclass(frozen=True, slots=True)
class Filter(Kind):
    """``{include: [...], exclude: [...]}`` regexes, or a plain list (or string): the include
    list, keeping ``default_exclude``. MM2 keys: include, exclude, legacy exclude."""

    default_exclude: tuple[str, ...] = ()

    def read(self, node: Field) -> TopicFilter:
        return read_filter(node, self.default_exclude)

    def allowed(self) -> str:
        return "regexes (`fullmatch`): a list (include), or `{include: [...], exclude: [...]}`"

    def from_mm2(self, keys: Sequence[str], take: Take, file: str) -> tuple[Any, dict[str, str]]:
        include_key, *exclude_keys = keys
        out: dict[str, Any] = {}
        came: dict[str, str] = {}
        text = take(include_key)
        if text is not None:
            out["include"], came["include"] = split_list(text), include_key
        for key in exclude_keys:
            text = take(key)
            if text is not None:
                out["exclude"], came["exclude"] = split_list(text), key
                break
        return (out or None), came


def read_filter(node: Field, default_exclude: tuple[str, ...] = ()) -> TopicFilter:
    """A plain list (or string) is the include list; or {include: [...], exclude: [...]}."""
    if isinstance(node.value, dict):
        fields = node.mapping(("include", "exclude"))
        inc = get(fields, "include", node)
        exc = get(fields, "exclude", node)
        return TopicFilter(
            inc.regex_list() if inc else (".*",),
            exc.regex_list() if exc else default_exclude,
        )
    return TopicFilter(node.regex_list(), default_exclude)


def split_list(value: str) -> list[str]:
    """An MM2 list: comma-separated, blanks dropped."""
    return [p.strip() for p in value.split(",") if p.strip()]
