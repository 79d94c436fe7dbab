"""One definition per setting: what the YAML reader, the MM2 reader, the per-flow settings and
the configuration reference are all derived from.

A setting is a field of one of the frozen config dataclasses (:mod:`aa.config.sections`,
:mod:`aa.config.model`) declared with :func:`setting`: the field gives its name, type and
default, the docstring written under it gives its doc, and the :class:`Setting` in its metadata
gives its kind (how it is read and checked), its MirrorMaker 2 keys, where it applies and which
:class:`~aa.mirror.settings.FlowSettings` attribute it feeds. What all settings of a class share
is said once on the class with :func:`section`. Nothing else spells a setting's name, default or
allowed values again. How to add one: docs/configuration.md ("How settings are defined").
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import sys
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
    doc: str = ""
    """The docstring under the field (filled in by :func:`settings_of`)."""
    mm2: tuple[str, ...] = ()
    """MirrorMaker 2 keys that set it: the key, then legacy spellings (a filter: include key,
    exclude key, legacy exclude key)."""
    applies: Applies | None = None
    """None: as its section says (:func:`section`; filled in by :func:`settings_of`)."""
    flow: str | None = None
    """The :class:`~aa.mirror.settings.FlowSettings` attribute it feeds, if any."""
    to_flow: Callable[[Any], Any] | None = None
    """How the flow holds the value, when not as the topology does."""
    shorthand: bool = False
    """A plain string for the whole section means this setting (``on_error: dead-letter``)."""
    required: bool = False
    """Must be given when the section is written as a mapping (or at all, with no default)."""
    key: str | None = None
    """The key path users write, when not the field's name (``ssl.cafile`` for ``ssl_cafile``)."""


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
    def applies(self) -> Applies:
        return self.setting.applies or "flow"

    @property
    def key(self) -> str:
        """What the user writes for it inside its section."""
        return self.setting.key or self.name

    @property
    def path(self) -> str:
        return f"{self.section}.{self.key}" if self.section else self.key


REQUIRED: Any = dataclasses.MISSING
"""The default of a setting that has none (``datacenters.X.bootstrap``)."""


def setting(
    default: T,
    kind: Kind,
    *,
    mm2: tuple[str, ...] = (),
    applies: Applies | None = None,
    flow: str | None = None,
    to_flow: Callable[[Any], Any] | None = None,
    shorthand: bool = False,
    required: bool = False,
) -> T:
    """Declare a dataclass field as a setting (typed as its default for the type checker); its
    doc is the docstring written under it."""
    meta = Setting(
        kind, "", mm2, applies, flow, to_flow, shorthand, required or default is REQUIRED
    )
    if default is REQUIRED:
        return dataclasses.field(metadata={_KEY: meta})  # type: ignore[no-any-return]
    return dataclasses.field(default=default, metadata={_KEY: meta})


@dataclass(frozen=True, slots=True)
class Section:
    """What every setting of a class has unless it says otherwise (see :func:`section`)."""

    applies: Applies = "flow"
    feeds_flow: bool = False
    """Each setting feeds the ``FlowSettings`` attribute of its own name (``flow=`` renames)."""
    groups: tuple[str, ...] = ()
    """Nested keys: a setting named ``ssl_cafile`` is written ``ssl.cafile`` (group ``ssl``)."""

    def resolve(self, name: str, s: Setting, doc: str) -> Setting:
        group = name.split("_", 1)[0]
        key = f"{group}.{name.split('_', 1)[1]}" if group in self.groups else None
        return dataclasses.replace(
            s,
            doc=doc,
            applies=s.applies or self.applies,
            flow=s.flow or (name if self.feeds_flow else None),
            key=s.key or key,
        )


_SECTION = "__aa_section__"


def section(
    *, applies: Applies = "flow", feeds_flow: bool = False, groups: tuple[str, ...] = ()
) -> Callable[[type[T]], type[T]]:
    """Class decorator: what the settings declared on the class share (a setting overrides
    ``applies`` and ``flow`` by saying its own)."""

    def mark(cls: type[T]) -> type[T]:
        setattr(cls, _SECTION, Section(applies, feeds_flow, groups))
        return cls

    return mark


@functools.cache
def _classes_of(module: str) -> dict[str, ast.ClassDef]:
    """The top-level classes of ``module``'s source, parsed once."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (OSError, TypeError):
        return {}
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring written under each annotated attribute of top-level class ``cls``,
    whitespace collapsed (what pydantic's ``use_attribute_docstrings`` reads); empty when the
    source is not there."""
    node = _classes_of(cls.__module__).get(cls.__qualname__)
    body = node.body if node else []
    docs: dict[str, str] = {}
    for stmt, after in itertools.pairwise(body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = " ".join(after.value.value.split())
    return docs


def settings_of(cls: type) -> tuple[Definition, ...]:
    """The settings declared on dataclass ``cls``, in declaration order, each with its doc and
    its section's defaults filled in."""
    return _settings_of(cls)


@functools.cache
def _settings_of(cls: type) -> tuple[Definition, ...]:
    hints = typing.get_type_hints(cls)
    shared: Section = getattr(cls, _SECTION, Section())
    docs = attribute_docs(cls)
    return tuple(
        Definition(
            "",
            f.name,
            f.default,
            hints[f.name],
            shared.resolve(f.name, f.metadata[_KEY], docs.get(f.name, "")),
        )
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
    declared names, a grouped setting inside its group's mapping (``source: {url: ...}``;
    unknown keys are errors naming the nearest known one)."""
    if node is None:
        return cls()
    defs = settings_of(cls)
    short = [d for d in defs if d.setting.shorthand]
    if short and isinstance(node.value, str):
        return cls(**{short[0].name: short[0].setting.kind.read(node)})
    fields = node.mapping(tuple(dict.fromkeys(d.key.split(".", 1)[0] for d in defs)))
    values: dict[str, Any] = {}
    for d in defs:
        where, parent, key = fields, node, d.key
        if "." in key:  # a grouped setting: `source.url` is `url` in the mapping `source`
            group, key = key.split(".", 1)
            inner = [x.key.split(".", 1)[1] for x in defs if x.key.startswith(group + ".")]
            needed = any(x.setting.required for x in defs if x.key.startswith(group + "."))
            sub = require(fields, group, node) if needed else get(fields, group, node)
            if sub is None:
                continue
            where, parent = sub.mapping(inner), sub
        f = require(where, key, parent) if d.setting.required else get(where, key, parent)
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
