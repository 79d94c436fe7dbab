"""Build a validated :class:`~aa.config.model.Topology` from a raw mapping.

The YAML reader hands over what ``yaml.safe_load`` returned; the MM2 reader builds the same
shape from a properties file. Every problem raises :class:`~aa.errors.ConfigError` naming the
file, the field path and what is allowed.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, cast

from aa.config.fields import Field, get, require
from aa.config.graph import full_mesh, hub_and_spoke, sort_flows
from aa.config.kinds import read_filter
from aa.config.model import (
    Datacenter,
    Direction,
    Flow,
    FlowGraph,
    LoopPrevention,
    SchemaTranslation,
    SecurityProtocol,
    TopicFilter,
    Topology,
)
from aa.config.names import PREFIX
from aa.config.schema import read_section, read_setting, sections, settings_of
from aa.config.security import SASL_FIELDS as SASL_FIELDS
from aa.config.security import SSL_FIELDS as SSL_FIELDS
from aa.config.security import read_sasl, read_ssl
from aa.provenance import DC_NAME

_STRUCTURE = ("datacenters", "flows")
"""Top-level keys read by hand below: their rules span fields (DC names, the flow graph)."""
_SECTIONS = dict(sections(Topology))
_TOP_SETTINGS = settings_of(Topology)
TOP_LEVEL = tuple(
    f.name
    for f in dataclasses.fields(Topology)
    if f.name in _STRUCTURE or f.name in _SECTIONS or any(d.name == f.name for d in _TOP_SETTINGS)
)
DC = {d.name: d for d in settings_of(Datacenter)}
"""A DC's settings by Datacenter attribute; what users write is ``d.key`` (``ssl.cafile``)."""
DC_FIELDS = tuple(dict.fromkeys(d.key.split(".")[0] for d in DC.values()))
RESERVED_DC_NAMES = frozenset({PREFIX.rstrip(".")})
"""``aa.`` starts aa's internal topic names, so no DC may be called ``aa``."""
_FLOW = re.compile(r"^\s*([^\s\->]+)\s*->\s*([^\s\->]+)\s*$")


def build_topology(raw: Any, file: str, *, ignored: tuple[str, ...] = ()) -> Topology:
    """Validate ``raw`` (the parsed file) and return the frozen topology."""
    root = Field(file, "", raw)
    if raw is None:
        raise root.error("the file is empty", "a mapping with at least `datacenters`")
    top = root.mapping(TOP_LEVEL)
    dcs = _datacenters(require(top, "datacenters", root))
    names = tuple(dc.name for dc in dcs)
    loop = _loop_prevention(get(top, "loop_prevention", root))
    if loop.mode == "prefix":
        for dc in dcs:
            if loop.separator in dc.name:
                raise Field(file, f"datacenters.{dc.name}", None).error(
                    f"the DC name contains the prefix separator {loop.separator!r}",
                    "DC names without the separator, or another loop_prevention.separator",
                )
    graph, flows = _flows(get(top, "flows", root), root.child("flows", None), names)
    return Topology(
        datacenters=dcs,
        flows=flows,
        graph=graph,
        loop_prevention=loop,
        **{d.name: read_setting(d, top, root) for d in _TOP_SETTINGS},
        **{
            name: read_section(cls, get(top, name, root))
            for name, cls in _SECTIONS.items()
            if name != "loop_prevention"
        },
        source_file=file,
        ignored=ignored,
    )


def _opt(fields: dict[str, Field], key: str, parent: Field, read: Any) -> Any:
    f = get(fields, key, parent)
    return None if f is None else read(f)


# -- datacenters -------------------------------------------------------------------------------


def _datacenters(node: Field) -> tuple[Datacenter, ...]:
    entries = node.mapping()
    if len(entries) < 2:
        raise node.error(f"{len(entries)} DC(s) given", "at least two DCs (name: {bootstrap})")
    return tuple(_datacenter(name, f) for name, f in entries.items())


def _datacenter(name: str, node: Field) -> Datacenter:
    if not DC_NAME.match(name):
        raise node.error(
            f"invalid DC name {name!r}",
            "a letter followed by up to 31 letters, digits, '_' or '-' (e.g. SF, eu-west_1)",
        )
    if name in RESERVED_DC_NAMES:
        raise node.error(f"the DC name {name!r} is reserved for aa's internal topics")
    if isinstance(node.value, str):  # shorthand: `SF: "host:port"`
        node = Field(node.file, node.path, {"bootstrap": node.value})
    fields = node.mapping(DC_FIELDS)
    parent = node
    bootstrap = _dc("bootstrap", require(fields, "bootstrap", parent))
    proto = cast(
        SecurityProtocol,
        _opt(fields, "security_protocol", parent, DC["security_protocol"].setting.kind.read)
        or DC["security_protocol"].default,
    )
    return Datacenter(
        name=name,
        bootstrap=bootstrap,
        security_protocol=proto,
        **read_ssl(node, fields, proto),
        **read_sasl(node, fields, proto),
    )


def _dc(attr: str, node: Field) -> Any:
    """The value of DC setting ``attr`` at ``node``, read as its definition says."""
    return DC[attr].setting.kind.read(node)


# -- flows -------------------------------------------------------------------------------------


def _flows(
    node: Field | None, where: Field, names: tuple[str, ...]
) -> tuple[FlowGraph, tuple[Flow, ...]]:
    allowed = "full-mesh | {hub-and-spoke: {hub: DC, direction: ...}} | a list like [SF->NYC]"
    if node is None:
        return FlowGraph("full-mesh"), sort_flows(full_mesh(names))
    if isinstance(node.value, str):
        node.choice(("full-mesh",))
        return FlowGraph("full-mesh"), sort_flows(full_mesh(names))
    if isinstance(node.value, dict):
        spec = node.mapping(("hub-and-spoke",))
        hs = require(spec, "hub-and-spoke", node)
        opts = hs.mapping(("hub", "direction"))
        hub_f = require(opts, "hub", hs)
        hub = hub_f.text()
        if hub not in names:
            raise hub_f.error(f"unknown DC {hub!r}", ", ".join(names))
        direction = cast(
            Direction,
            _opt(opts, "direction", hs, lambda f: f.choice(("inbound", "outbound", "both")))
            or "both",
        )
        return FlowGraph("hub-and-spoke", hub, direction), hub_and_spoke(names, hub, direction)
    if isinstance(node.value, list):
        flows: list[Flow] = []
        seen: set[str] = set()
        for item in node.items():
            flow = _flow_item(item, names)
            if flow.name in seen:
                raise item.error(f"flow {flow.name} is listed twice")
            seen.add(flow.name)
            flows.append(flow)
        if not flows:
            raise node.error("the flow list is empty", allowed)
        return FlowGraph("list"), sort_flows(flows)
    raise node.error(f"invalid value {node.value!r}", allowed)


def _flow_item(item: Field, names: tuple[str, ...]) -> Flow:
    topics: TopicFilter | None = None
    schemas: SchemaTranslation | None = None
    if isinstance(item.value, dict) and len(item.value) == 1:
        ((key, opts),) = item.mapping().items()
        text = key
        sub = opts.mapping(("topics", "schemas"))
        tf = get(sub, "topics", opts)
        topics = read_filter(tf) if tf else None
        sf = get(sub, "schemas", opts)
        schemas = _schemas(sf) if sf else None
    elif isinstance(item.value, str):
        text = item.value
    else:
        raise item.error(
            f"invalid flow {item.value!r}", "'SRC->DST' or {'SRC->DST': {topics: ...}}"
        )
    m = _FLOW.match(text)
    if not m:
        raise item.error(f"invalid flow {text!r}", "'SRC->DST' with two DC names, e.g. SF->NYC")
    src, dst = m.groups()
    for dc in (src, dst):
        if dc not in names:
            raise item.error(f"flow {text!r} names unknown DC {dc!r}", ", ".join(names))
    if src == dst:
        raise item.error(f"flow {text!r} goes from a DC to itself", "two different DCs")
    return Flow(src, dst, topics, schemas)


def _schemas(node: Field) -> SchemaTranslation:
    schemas = read_section(SchemaTranslation, node)
    for side in ("source", "target"):
        user, password = (getattr(schemas, f"{side}_{k}") for k in ("username", "password"))
        if (user is None) != (password is None):
            raise node.child(side, None).error(
                "username without password, or password without username", "both, or neither"
            )
    return schemas


# -- topics and loop prevention ----------------------------------------------------------------


def _loop_prevention(node: Field | None) -> LoopPrevention:
    loop = read_section(LoopPrevention, node)
    given = node.value if node is not None and isinstance(node.value, dict) else {}
    if loop.mode == "headers" and (given.get("separator") is not None or "style" in given):
        assert node is not None
        raise node.error("separator and style apply to mode: prefix only", "mode: prefix")
    return loop
