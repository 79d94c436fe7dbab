"""The JSON form of aa's small value records (offset syncs, checkpoints, heartbeats), written
and read by the same code from the dataclass's fields.

A record is one JSON object: the fields in declaration order, each under its name or the
shorter wire name the record's module gives it (``ts`` for ``ts_ms``); an optional field that is
``None`` is left out. Reading calls each field's type on its value (``int("5")`` is accepted, as
it always was), so a record written by something else raises ``KeyError``, ``TypeError`` or
``ValueError``, which each caller turns into its own decode error.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

T = TypeVar("T")
_NONE: Mapping[str, str] = types.MappingProxyType({})


@functools.cache
def _layout(cls: type) -> tuple[tuple[str, Callable[[Any], Any], bool], ...]:
    """``(name, type to call, optional)`` per field of dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        args = [a for a in typing.get_args(hints[f.name]) if a is not type(None)]
        optional = len(args) == 1
        out.append((f.name, args[0] if optional else hints[f.name], optional))
    return tuple(out)


def dump(obj: Any, names: Mapping[str, str] = _NONE, head: Mapping[str, Any] = _NONE) -> bytes:
    """``obj`` as a JSON object (``head``'s items first: ``{"kind": ...}``)."""
    value = dict(head)
    cls: type = type(obj)
    for name, _, optional in _layout(cls):
        v = getattr(obj, name)
        if not (optional and v is None):
            value[names.get(name, name)] = v
    return orjson.dumps(value)


def load(cls: type[T], d: Any, names: Mapping[str, str] = _NONE) -> T:
    """A ``cls`` from the parsed JSON object ``d`` (see the module doc for what raises)."""
    if not isinstance(d, dict):
        raise TypeError(f"not a JSON object but {type(d).__name__}")
    args = []
    plain: type = cls
    for name, kind, optional in _layout(plain):
        key = names.get(name, name)
        if optional:
            args.append(None if d.get(key) is None else kind(d[key]))
        else:
            args.append(kind(d[key]))
    return cls(*args)
