"""The JSON form of aa's small value records (offset syncs, checkpoints, heartbeats), written
and read by the same code from the dataclass's fields.

A record is one JSON object: the fields in declaration order, each under its name or the
shorter wire name its :class:`Form` gives it (``ts`` for ``ts_ms``); an optional field that is
``None`` is left out. Reading calls each field's type on its value (``int("5")`` is accepted, as
it always was), so a record written by something else raises ``KeyError``, ``TypeError`` or
``ValueError``, which each caller turns into its own decode error.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import orjson

T = TypeVar("T")
_NONE: Mapping[str, Any] = types.MappingProxyType({})


class Form(Generic[T]):
    """How dataclass ``cls`` is written: ``names`` renames fields on the wire, ``head`` is
    written first (``{"kind": "repartitioned"}``)."""

    def __init__(self, cls: type[T], head: Mapping[str, Any] = _NONE, **names: str) -> None:
        self.cls = cls
        self.head = dict(head)
        hints = typing.get_type_hints(cls)
        self._fields: list[tuple[str, str, Any, bool]] = []
        """``(attribute, key, type to call, optional)`` per field."""
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            args = [a for a in typing.get_args(hints[f.name]) if a is not type(None)]
            optional = len(args) == 1
            kind = args[0] if optional else hints[f.name]
            self._fields.append((f.name, names.get(f.name, f.name), kind, optional))

    def dump(self, obj: T) -> bytes:
        value = dict(self.head)
        for attr, key, _, optional in self._fields:
            v = getattr(obj, attr)
            if not (optional and v is None):
                value[key] = v
        return orjson.dumps(value)

    def load(self, d: Any) -> T:
        """A ``cls`` from the parsed JSON object ``d`` (see the module doc for what raises)."""
        if not isinstance(d, dict):
            raise TypeError(f"not a JSON object but {type(d).__name__}")
        return self.cls(
            *[
                (None if d.get(key) is None else kind(d[key])) if optional else kind(d[key])
                for _, key, kind, optional in self._fields
            ]
        )
