"""Build a validated :class:`~aa.config.model.Topology` from a raw mapping.

The YAML reader hands over what ``yaml.safe_load`` returned; the MM2 reader builds the same
shape from a properties file. Every problem raises :class:`~aa.errors.ConfigError` naming the
file, the field path and what is allowed.
"""

from __future__ import annotations

import re
from typing import Any, cast

from aa.config import names
from aa.config.fields import Field, get, require
from aa.config.graph import full_mesh, hub_and_spoke, sort_flows
from aa.config.model import (
    DEFAULT_CONFIG_EXCLUDE,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    Checkpoints,
    Compression,
    Datacenter,
    Delivery,
    Direction,
    ErrorAction,
    Flow,
    FlowGraph,
    HeadersTopicSync,
    Heartbeats,
    LoopMode,
    LoopPrevention,
    MetricsEndpoint,
    OffsetSyncs,
    OnError,
    PrefixStyle,
    SaslMechanism,
    SecurityProtocol,
    TopicFilter,
    TopicSync,
    Topology,
    Tuning,
)
from aa.config.secret import Secret
from aa.provenance import DC_NAME

TOP_LEVEL = (
    "datacenters",
    "flows",
    "topics",
    "loop_prevention",
    "delivery",
    "tuning",
    "topic_sync",
    "on_error",
    "metrics",
    "offset_sync",
    "checkpoints",
    "heartbeats",
)
DC_FIELDS = ("bootstrap", "security_protocol", "ssl", "sasl")
SSL_FIELDS = ("cafile", "certfile", "keyfile")
SASL_FIELDS = ("mechanism", "username", "password", "token_provider")
RESERVED_DC_NAMES = frozenset({names.PREFIX.rstrip(".")})
"""``aa.`` starts aa's internal topic names, so no DC may be called ``aa``."""
_FLOW = re.compile(r"^\s*([^\s\->]+)\s*->\s*([^\s\->]+)\s*$")
_HOST_PORT = re.compile(r"^[^\s:,]+:(\d{1,5})$")


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
    topics_field = get(top, "topics", root)
    return Topology(
        datacenters=dcs,
        flows=flows,
        graph=graph,
        topics=_filter(topics_field) if topics_field else TopicFilter(),
        loop_prevention=loop,
        delivery=cast(
            Delivery,
            _opt(top, "delivery", root, lambda f: f.choice(("at-least-once", "exactly-once")))
            or "at-least-once",
        ),
        tuning=_tuning(get(top, "tuning", root)),
        topic_sync=_topic_sync(get(top, "topic_sync", root)),
        on_error=_on_error(get(top, "on_error", root)),
        metrics=_metrics(get(top, "metrics", root)),
        offset_sync=_offset_sync(get(top, "offset_sync", root)),
        checkpoints=_checkpoints(get(top, "checkpoints", root)),
        heartbeats=_heartbeats(get(top, "heartbeats", root)),
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
    bootstrap_f = require(fields, "bootstrap", parent)
    bootstrap = bootstrap_f.text()
    for server in bootstrap.split(","):
        m = _HOST_PORT.match(server.strip())
        if not m or not 0 < int(m.group(1)) < 65536:
            raise bootstrap_f.error(
                f"invalid server {server.strip()!r}", "host:port[,host:port...]"
            )
    proto = cast(
        SecurityProtocol,
        _opt(fields, "security_protocol", parent, lambda f: f.choice(SECURITY_PROTOCOLS))
        or "PLAINTEXT",
    )
    ssl_f = get(fields, "ssl", parent)
    ssl = ssl_f.mapping(SSL_FIELDS) if ssl_f else {}
    if ssl and proto not in ("SSL", "SASL_SSL"):
        raise ssl_f.error(  # type: ignore[union-attr]  # ssl non-empty implies ssl_f
            f"ssl settings given but security_protocol is {proto}", "SSL or SASL_SSL"
        )
    cafile = _opt(ssl, "cafile", node, lambda f: f.text())
    certfile = _opt(ssl, "certfile", node, lambda f: f.text())
    keyfile = _opt(ssl, "keyfile", node, lambda f: f.text())
    if keyfile and not certfile:
        raise ssl["keyfile"].error("keyfile without certfile", "certfile, or certfile+keyfile")
    sasl_f = get(fields, "sasl", parent)
    sasl = sasl_f.mapping(SASL_FIELDS) if sasl_f else {}
    mechanism = username = token_provider = None
    password: Secret | None = None
    if proto.startswith("SASL_"):
        if sasl_f is None:
            raise Field(node.file, f"{node.path}.sasl", None).error(
                f"missing: security_protocol {proto} needs sasl settings",
                "{mechanism, username, password}",
            )
        mechanism = cast(SaslMechanism, require(sasl, "mechanism", sasl_f).choice(SASL_MECHANISMS))
        if mechanism == "OAUTHBEARER":
            # the token comes from a hook (aa.config.client.token_provider), not a password
            token_provider = require(sasl, "token_provider", sasl_f).text()
            for unused in ("username", "password"):
                if unused in sasl:
                    raise sasl[unused].error(
                        "not used with OAUTHBEARER", "token_provider: 'module:factory' only"
                    )
        else:
            if "token_provider" in sasl:
                raise sasl["token_provider"].error(
                    f"only used with OAUTHBEARER, not {mechanism}", "username and password"
                )
            username = require(sasl, "username", sasl_f).text()
            pw = require(sasl, "password", sasl_f)
            password = Secret(pw.text(), where=f"{pw.file}: {pw.path}")
    elif sasl:
        assert sasl_f is not None
        raise sasl_f.error(
            f"sasl settings given but security_protocol is {proto}", "SASL_PLAINTEXT or SASL_SSL"
        )
    return Datacenter(
        name=name,
        bootstrap=bootstrap,
        security_protocol=proto,
        ssl_cafile=cafile,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        sasl_mechanism=mechanism,
        sasl_username=username,
        sasl_password=password,
        sasl_token_provider=token_provider,
    )


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
    if isinstance(item.value, dict) and len(item.value) == 1:
        ((key, opts),) = item.mapping().items()
        text = key
        sub = opts.mapping(("topics",))
        tf = get(sub, "topics", opts)
        topics = _filter(tf) if tf else None
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
    return Flow(src, dst, topics)


# -- topics and loop prevention ----------------------------------------------------------------


def _filter(node: Field, default_exclude: tuple[str, ...] = ()) -> TopicFilter:
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


def _loop_prevention(node: Field | None) -> LoopPrevention:
    if node is None:
        return LoopPrevention()
    if isinstance(node.value, str):
        return LoopPrevention(cast(LoopMode, node.choice(("headers", "prefix"))))
    fields = node.mapping(("mode", "separator", "style"))
    mode = cast(LoopMode, require(fields, "mode", node).choice(("headers", "prefix")))
    sep_f = get(fields, "separator", node)
    sep = sep_f.text() if sep_f else "."
    if sep_f and (any(c.isspace() for c in sep) or any(c in sep for c in ",/")):
        raise sep_f.error(
            f"invalid separator {sep!r}", "a non-empty string without spaces, ',' or '/'"
        )
    style = cast(
        PrefixStyle, _opt(fields, "style", node, lambda f: f.choice(("rename", "book"))) or "rename"
    )
    if mode == "headers" and (sep_f or "style" in fields):
        raise node.error("separator and style apply to mode: prefix only", "mode: prefix")
    return LoopPrevention(mode, sep, style)


# -- the other sections ------------------------------------------------------------------------


def _tuning(node: Field | None) -> Tuning:
    d = Tuning()
    if node is None:
        return d
    f = node.mapping(tuple(Tuning.__dataclass_fields__))

    def i(key: str, lo: int, default: int) -> int:
        v = get(f, key, node)
        return default if v is None else v.integer(lo=lo)

    comp = get(f, "compression", node)
    interval = get(f, "commit_interval_s", node)
    return Tuning(
        fetch_max_bytes=i("fetch_max_bytes", 1024, d.fetch_max_bytes),
        max_partition_fetch_bytes=i("max_partition_fetch_bytes", 1024, d.max_partition_fetch_bytes),
        max_poll_records=i("max_poll_records", 1, d.max_poll_records),
        batch_size=i("batch_size", 1024, d.batch_size),
        linger_ms=i("linger_ms", 0, d.linger_ms),
        compression=(
            cast(Compression, comp.choice(("none", "gzip", "snappy", "lz4", "zstd")))
            if comp
            else d.compression
        ),
        max_in_flight=i("max_in_flight", 1, d.max_in_flight),
        commit_interval_s=interval.number(positive=True) if interval else d.commit_interval_s,
        request_timeout_ms=i("request_timeout_ms", 1000, d.request_timeout_ms),
    )


def _topic_sync(node: Field | None) -> TopicSync:
    if node is None:
        return TopicSync()
    keys = ("enabled", "interval_s", "config_exclude", "headers_mode")
    f = node.mapping(keys)
    en, iv, ce, hm = (get(f, k, node) for k in keys)
    return TopicSync(
        enabled=en.boolean() if en else True,
        interval_s=iv.number(positive=True) if iv else 30.0,
        config_exclude=ce.str_list() if ce else DEFAULT_CONFIG_EXCLUDE,
        headers_mode=cast(HeadersTopicSync, hm.choice(("create-only", "sync")))
        if hm
        else "create-only",
    )


def _on_error(node: Field | None) -> OnError:
    if node is None:
        return OnError()
    if isinstance(node.value, str):
        return OnError(cast(ErrorAction, node.choice(("fail", "dead-letter"))))
    f = node.mapping(("action", "dead_letter_topic"))
    action = cast(ErrorAction, require(f, "action", node).choice(("fail", "dead-letter")))
    topic_f = get(f, "dead_letter_topic", node)
    topic = topic_f.text() if topic_f else OnError().dead_letter_topic
    if topic_f:
        _template(topic_f, ("source", "target"))
    return OnError(action, topic)


def _template(node: Field, names: tuple[str, ...]) -> None:
    text = node.text()
    try:
        out = text.format(**dict.fromkeys(names, "X"))
    except (KeyError, IndexError, ValueError) as exc:
        allowed = ", ".join("{" + n + "}" for n in names)
        raise node.error(f"invalid placeholder in {text!r} ({exc})", allowed) from None
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", out):
        raise node.error(f"{text!r} is not a valid topic name", "letters, digits, '.', '_', '-'")


def _metrics(node: Field | None) -> MetricsEndpoint:
    if node is None:
        return MetricsEndpoint()
    f = node.mapping(("host", "port"))
    host, port = get(f, "host", node), get(f, "port", node)
    return MetricsEndpoint(
        host=host.text() if host else "127.0.0.1",
        port=port.integer(lo=0, hi=65535) if port else 9464,
    )


def _offset_sync(node: Field | None) -> OffsetSyncs:
    if node is None:
        return OffsetSyncs()
    f = node.mapping(("enabled", "topic"))
    en, topic = get(f, "enabled", node), get(f, "topic", node)
    if topic:
        _template(topic, ("source", "target"))
    return OffsetSyncs(
        enabled=en.boolean() if en else True, topic=topic.text() if topic else OffsetSyncs().topic
    )


def _checkpoints(node: Field | None) -> Checkpoints:
    d = Checkpoints()
    if node is None:
        return d
    f = node.mapping(("enabled", "groups", "interval_s", "apply", "topic"))
    en, gr, iv, ap, topic = (
        get(f, k, node) for k in ("enabled", "groups", "interval_s", "apply", "topic")
    )
    if topic:
        _template(topic, ("source", "target"))
    return Checkpoints(
        enabled=en.boolean() if en else d.enabled,
        groups=_filter(gr, d.groups.exclude) if gr else d.groups,
        interval_s=iv.number(positive=True) if iv else d.interval_s,
        apply=ap.boolean() if ap else d.apply,
        topic=topic.text() if topic else d.topic,
    )


def _heartbeats(node: Field | None) -> Heartbeats:
    d = Heartbeats()
    if node is None:
        return d
    f = node.mapping(("enabled", "interval_s", "topic"))
    en, iv, topic = (get(f, k, node) for k in ("enabled", "interval_s", "topic"))
    if topic:
        _template(topic, ())
    return Heartbeats(
        enabled=en.boolean() if en else d.enabled,
        interval_s=iv.number(positive=True) if iv else d.interval_s,
        topic=topic.text() if topic else d.topic,
    )
