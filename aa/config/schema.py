"""One definition per setting: what the YAML reader, the MM2 reader, the per-flow settings and
the configuration reference are all derived from.

A setting is a field of one of the frozen config dataclasses (:mod:`aa.config.sections`,
:mod:`aa.config.model`) declared
with :func:`setting`: the field gives its name, type and default; the :class:`Setting` in its
metadata gives its kind (how it is read and checked), its doc, its MirrorMaker 2 keys, where it
applies and which :class:`~aa.mirror.settings.FlowSettings` attribute it feeds. Nothing else
spells a setting's name, default or allowed values again. How to add one: docs/configuration.md
("How settings are defined").
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from aa.config.fields import Field, get, require
from aa.config.kinds import Kind

T = TypeVar("T")
Applies = Literal["flow", "process", "topology", "datacenter"]
"""``flow``: each flow on its own (read by the flow or its router); ``process``: each ``aa run``
process (metrics endpoint, heartbeats, checkpoints); ``topology``: every process must agree
(routing decisions are derived from it); ``datacenter``: every client of that DC."""

_KEY = "aa.setting"


@dataclass(frozen=True, slots=True)
class Setting:
    """What a config dataclass field says about itself beyond name, type and default."""

    kind: Kind
    doc: str
    mm2: tuple[str, ...] = ()
    """MirrorMaker 2 keys that set it: the key, then legacy spellings (a filter: include key,
    exclude key, legacy exclude key)."""
    applies: Applies = "flow"
    flow: str | None = None
    """The :class:`~aa.mirror.settings.FlowSettings` attribute it feeds, if any."""
    to_flow: Callable[[Any], Any] | None = None
    """How the flow holds the value, when not as the topology does."""
    shorthand: bool = False
    """A plain string for the whole section means this setting (``on_error: dead-letter``)."""
    required: bool = False
    """Must be given when the section is written as a mapping."""
    key: str | None = None
    """The key path users write, when not the field's name (``ssl.cafile`` for ``ssl_cafile``)."""


def setting(
    default: T,
    kind: Kind,
    doc: str,
    *,
    mm2: tuple[str, ...] = (),
    applies: Applies = "flow",
    flow: str | None = None,
    to_flow: Callable[[Any], Any] | None = None,
    shorthand: bool = False,
    required: bool = False,
) -> T:
    """Declare a dataclass field as a setting (typed as its default for the type checker)."""
    meta = Setting(kind, doc, mm2, applies, flow, to_flow, shorthand, required)
    return dataclasses.field(default=default, metadata={_KEY: meta})


def dc_setting(
    default: T, kind: Kind, doc: str, *, mm2: tuple[str, ...] = (), key: str | None = None
) -> T:
    """Declare a field of :class:`~aa.config.model.Datacenter` (its reader is hand-written in
    ``build.py``: the client settings depend on each other; it reads values with these kinds)."""
    meta = Setting(kind, doc, mm2, "datacenter", key=key, required=default is REQUIRED)
    if default is REQUIRED:
        return dataclasses.field(metadata={_KEY: meta})  # type: ignore[no-any-return]
    return dataclasses.field(default=default, metadata={_KEY: meta})


REQUIRED: Any = dataclasses.MISSING
"""The default of a setting that has none (``datacenters.X.bootstrap``)."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One setting as seen from the top of the topology: ``path`` is what a user writes."""

    section: str
    """The top-level key it lives under ("" for a top-level setting such as ``delivery``)."""
    name: str
    default: Any
    type: Any
    setting: Setting

    @property
    def key(self) -> str:
        """What the user writes for it inside its section."""
        return self.setting.key or self.name

    @property
    def path(self) -> str:
        return f"{self.section}.{self.key}" if self.section else self.key


def settings_of(cls: type) -> tuple[Definition, ...]:
    """The settings declared on dataclass ``cls``, in declaration order."""
    hints = typing.get_type_hints(cls)
    return tuple(
        Definition("", f.name, f.default, hints[f.name], f.metadata[_KEY])
        for f in dataclasses.fields(cls)
        if _KEY in f.metadata
    )


def sections(root: type) -> tuple[tuple[str, type], ...]:
    """The fields of ``root`` whose type is a dataclass of settings: ``(name, class)``."""
    hints = typing.get_type_hints(root)
    return tuple(
        (f.name, hints[f.name])
        for f in dataclasses.fields(root)
        if dataclasses.is_dataclass(hints[f.name]) and settings_of(hints[f.name])
    )


def definitions(root: type) -> tuple[Definition, ...]:
    """Every setting under ``root``: its own (top level) and those of its sections."""
    out = list(settings_of(root))
    for name, cls in sections(root):
        out += [dataclasses.replace(d, section=name) for d in settings_of(cls)]
    return tuple(out)


def value_at(obj: Any, d: Definition) -> Any:
    """The value of ``d`` in a built ``root`` object."""
    return getattr(getattr(obj, d.section), d.name) if d.section else getattr(obj, d.name)


def read_section(cls: type[T], node: Field | None) -> T:
    """Build section ``cls`` from what the user wrote at ``node`` (absent: all defaults).

    A plain string is the section's shorthand setting, if it has one; otherwise a mapping of the
    declared names (unknown keys are errors naming the nearest known one)."""
    if node is None:
        return cls()
    defs = settings_of(cls)
    short = [d for d in defs if d.setting.shorthand]
    if short and isinstance(node.value, str):
        return cls(**{short[0].name: short[0].setting.kind.read(node)})
    fields = node.mapping(tuple(d.name for d in defs))
    values: dict[str, Any] = {}
    for d in defs:
        f = require(fields, d.name, node) if d.setting.required else get(fields, d.name, node)
        if f is not None:
            values[d.name] = d.setting.kind.read(f)
    return cls(**values)


def read_setting(d: Definition, fields: dict[str, Field], parent: Field) -> Any:
    """A top-level setting: its value, or its default when not given."""
    f = get(fields, d.name, parent)
    return d.default if f is None else d.setting.kind.read(f)


def iter_mm2_keys(root: type) -> Iterator[tuple[str, Definition]]:
    for d in definitions(root):
        for key in d.setting.mm2:
            yield key, d
