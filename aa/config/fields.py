"""Typed reading of one raw config value, with errors that name the file and the field path.

A :class:`Field` wraps a value parsed from YAML (or built from an MM2 properties file) together
with where it came from; its accessors check the type and range and raise
:class:`~aa.errors.ConfigError` saying ``<file>: <path>: <problem>; allowed: <what>``.
"""

from __future__ import annotations

import contextlib
import difflib
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from aa.errors import ConfigError

_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Field:
    """A raw value at ``path`` in ``file``."""

    file: str
    path: str
    value: Any

    def error(self, problem: str, allowed: str | None = None) -> ConfigError:
        where = self.path or "(top level)"
        tail = f"; allowed: {allowed}" if allowed else ""
        return ConfigError(f"{self.file}: {where}: {problem}{tail}")

    def child(self, key: str | int, value: Any) -> Field:
        if isinstance(key, int):
            return Field(self.file, f"{self.path}[{key}]", value)
        return Field(self.file, f"{self.path}.{key}" if self.path else key, value)

    # -- shapes -------------------------------------------------------------------------------

    def mapping(self, allowed: Sequence[str] | None = None) -> dict[str, Field]:
        """The value as a mapping of child fields; unknown keys are errors when ``allowed``."""
        if self.value is None:
            return {}
        if not isinstance(self.value, dict):
            raise self.error(f"expected a mapping, got {_kind(self.value)}")
        out: dict[str, Field] = {}
        for key, val in self.value.items():
            if not isinstance(key, str):
                raise self.error(f"keys must be strings, got {key!r}")
            if allowed is not None and key not in allowed:
                where = self.path or "the top level"
                near = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise ConfigError(
                    f"{self.file}: unknown field {key!r} in {where}; allowed: "
                    f"{', '.join(allowed)}{hint}"
                )
            out[key] = self.child(key, val)
        return out

    def items(self) -> Iterator[Field]:
        if not isinstance(self.value, list):
            raise self.error(f"expected a list, got {_kind(self.value)}")
        for i, v in enumerate(self.value):
            yield self.child(i, v)

    # -- scalars ------------------------------------------------------------------------------

    def text(self, *, empty: bool = False) -> str:
        if not isinstance(self.value, str):
            raise self.error(f"expected a string, got {_kind(self.value)}")
        if not empty and not self.value.strip():
            raise self.error("must not be empty")
        return self.value

    def choice(self, options: Sequence[str]) -> str:
        value = self.value
        if not isinstance(value, str) or value not in options:
            raise self.error(f"invalid value {value!r}", " | ".join(options))
        return value

    def boolean(self) -> bool:
        if isinstance(self.value, bool):
            return self.value
        if isinstance(self.value, str) and self.value.strip().lower() in ("true", "false"):
            return self.value.strip().lower() == "true"
        raise self.error(f"expected true or false, got {self.value!r}")

    def integer(self, *, lo: int | None = None, hi: int | None = None) -> int:
        value = self.value
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"expected an integer, got {self.value!r}", _range(lo, hi))
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise self.error(f"{value} is out of range", _range(lo, hi))
        return value

    def number(self, *, lo: float | None = None, positive: bool = False) -> float:
        value = self.value
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = float(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"expected a number, got {self.value!r}")
        if not math.isfinite(value):
            raise self.error(f"{value} is not a finite number", "a number such as 30 or 0.5")
        if positive and value <= 0:
            raise self.error(f"{value} must be greater than 0")
        if lo is not None and value < lo:
            raise self.error(f"{value} is out of range", f">= {lo}")
        return float(value)

    def regex_list(self) -> tuple[str, ...]:
        """A list of regexes (a single string is a one-element list); each must compile."""
        raw = [self] if isinstance(self.value, str) else list(self.items())
        out = []
        for item in raw:
            text = item.text()
            with warnings.catch_warnings():
                # Python reads `[[` (a "possible nested set") unlike Java's class union, and
                # says so with a FutureWarning: refuse it rather than select by a guess
                warnings.simplefilter("error", FutureWarning)
                try:
                    re.compile(text)
                except FutureWarning as w:
                    raise item.error(
                        f"ambiguous regular expression {text!r}: {str(w).lower()}; escape a "
                        "literal '[' as '\\[' (and write a union such as [[a-z][0-9]] as "
                        "[a-z0-9])"
                    ) from None
                except re.error as exc:
                    raise item.error(f"invalid regular expression {text!r}: {exc}") from None
            out.append(text)
        return tuple(out)

    def str_list(self) -> tuple[str, ...]:
        raw = [self] if isinstance(self.value, str) else list(self.items())
        return tuple(item.text() for item in raw)


def get(fields: dict[str, Field], key: str, parent: Field) -> Field | None:
    """The child ``key`` if given (``None`` values count as not given)."""
    f = fields.get(key)
    if f is None or f.value is None:
        return None
    return f


def require(fields: dict[str, Field], key: str, parent: Field) -> Field:
    f = get(fields, key, parent)
    if f is None:
        where = parent.path or "the top level"
        raise ConfigError(f"{parent.file}: {parent.child(key, None).path}: missing in {where}")
    return f


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _range(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return "an integer"
