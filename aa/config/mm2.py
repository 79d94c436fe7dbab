"""Read a MirrorMaker 2 dedicated-mode properties file into the same topology model.

Mapping (MM2 property → aa field):

* ``clusters = A, B`` → ``datacenters``; ``A.bootstrap.servers`` → ``datacenters.A.bootstrap``;
  ``[A.]security.protocol``, ``[A.]sasl.mechanism``, ``[A.]sasl.jaas.config`` (PLAIN/SCRAM login
  module ``username=`` / ``password=``), ``[A.]ssl.truststore.location`` and
  ``[A.]ssl.keystore.location`` when their ``*.type`` is ``PEM`` → the DC's client settings
  (top-level client settings apply to every cluster, a cluster's own override them).
* ``A->B.enabled = true`` → the flow A→B; ``A->B.topics`` / ``A->B.topics.exclude`` → that
  flow's own topic filter.
* ``topics``, ``topics.exclude`` (legacy ``topics.blacklist``) → ``topics`` (MM2 lists are
  comma-separated regexes).
* ``replication.policy.class``: ``DefaultReplicationPolicy`` → ``loop_prevention: prefix``
  (style ``rename``), ``IdentityReplicationPolicy`` → ``headers``;
  ``replication.policy.separator`` → the prefix separator.
* ``sync.topic.configs.enabled``, ``refresh.topics.interval.seconds``,
  ``config.properties.exclude`` → ``topic_sync``; ``emit.checkpoints.*``, ``groups``,
  ``groups.exclude``, ``sync.group.offsets.enabled`` → ``checkpoints``;
  ``emit.heartbeats.*`` → ``heartbeats``; ``emit.offset-syncs.enabled`` → ``offset_sync``;
  ``exactly.once.source.support = enabled`` → ``delivery: exactly-once``.

Every other key is kept in :attr:`Topology.ignored` (``aa plan`` lists them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aa.config.build import build_topology
from aa.config.model import Topology
from aa.errors import ConfigError

POLICIES = {
    "DefaultReplicationPolicy": "prefix",
    "IdentityReplicationPolicy": "headers",
}
_PAIR = re.compile(r"^([^.\s]+)->([^.\s]+)\.(.+)$")
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_CLIENT_KEYS = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.type",
)


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax: ``#``/``!`` comments, ``=``/``:``/space separators,
    backslash line continuations and escapes. Later keys win, as in Java."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key, value = _split(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t":
            key, rest = line[:j], line[j:].lstrip(" \t")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t")
            return key, rest
        j += 1
    return line, ""


def _unescape(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        s = m.group(1)
        if s.startswith("u"):
            return chr(int(s[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(s, s)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", sub, text)


def _list(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _bool(props: dict[str, str], key: str, file: str) -> bool | None:
    if key not in props:
        return None
    v = props[key].strip().lower()
    if v not in ("true", "false"):
        raise ConfigError(f"{file}: {key}: invalid value {props[key]!r}; allowed: true | false")
    return v == "true"


def read_mm2(text: str, file: str = "<string>") -> Topology:
    """Build the topology an MM2 dedicated-mode properties file describes."""
    props = parse_properties(text)
    used: set[str] = set()

    def take(key: str) -> str | None:
        if key in props:
            used.add(key)
            return props[key]
        return None

    clusters_raw = take("clusters")
    if clusters_raw is None:
        raise ConfigError(f"{file}: clusters: missing; allowed: a list like `clusters = A, B`")
    clusters = _list(clusters_raw)
    datacenters: dict[str, Any] = {}
    for c in clusters:
        bootstrap = take(f"{c}.bootstrap.servers")
        if bootstrap is None:
            raise ConfigError(f"{file}: {c}.bootstrap.servers: missing for cluster {c}")
        dc: dict[str, Any] = {"bootstrap": bootstrap}
        dc.update(_client(c, props, take, file))
        datacenters[c] = dc

    flows: list[Any] = []
    enabled: set[str] = set()
    for key in sorted(props):
        m = _PAIR.match(key)
        if not m or m.group(3) != "enabled":
            continue
        src, dst = m.group(1), m.group(2)
        if src not in clusters or dst not in clusters:
            raise ConfigError(
                f"{file}: {key}: names a cluster not in `clusters`; allowed: {', '.join(clusters)}"
            )
        take(key)
        if not _bool(props, key, file):
            continue
        pair = f"{src}->{dst}"
        enabled.add(pair)
        tf = _topic_filter(pair + ".topics", take)
        flows.append({pair: {"topics": tf}} if tf else pair)
    for key in props:
        m = _PAIR.match(key)
        pair = f"{m.group(1)}->{m.group(2)}" if m else ""
        if m and m.group(3).startswith("topics") and pair not in enabled:
            raise ConfigError(
                f"{file}: {key}: set for a flow that is not enabled; set {pair}.enabled = true "
                "or remove it"
            )
    if not flows:
        raise ConfigError(
            f"{file}: no flow is enabled; allowed: `A->B.enabled = true` for some clusters A, B"
        )

    every = {f"{a}->{b}" for a in clusters for b in clusters if a != b}
    full = enabled == every and all(isinstance(f, str) for f in flows)
    raw: dict[str, Any] = {"datacenters": datacenters, "flows": "full-mesh" if full else flows}
    tf = _topic_filter("topics", take)
    if tf:
        raw["topics"] = tf
    policy = take("replication.policy.class")
    mode = "prefix"  # MM2's default is DefaultReplicationPolicy
    if policy is not None:
        short = policy.strip().rsplit(".", 1)[-1]
        if short not in POLICIES:
            raise ConfigError(
                f"{file}: replication.policy.class: {policy!r} is not supported; allowed: "
                "org.apache.kafka.connect.mirror.DefaultReplicationPolicy | "
                "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
            )
        mode = POLICIES[short]
    sep = take("replication.policy.separator")
    if mode == "prefix":
        raw["loop_prevention"] = {"mode": "prefix", "separator": sep or ".", "style": "rename"}
    else:
        raw["loop_prevention"] = "headers"
    if (take("exactly.once.source.support") or "").strip().lower() == "enabled":
        raw["delivery"] = "exactly-once"
    _sections(raw, props, take, file)
    unused = tuple(sorted(k for k in props if k not in used))
    return build_topology(raw, file, ignored=unused)


def _topic_filter(prefix: str, take: Any) -> dict[str, list[str]] | None:
    inc = take(prefix)
    exc = take(prefix + ".exclude")
    legacy = take(prefix + ".blacklist")
    if exc is None:
        exc = legacy
    if inc is None and exc is None:
        return None
    out: dict[str, list[str]] = {"include": _list(inc) if inc is not None else [".*"]}
    if exc is not None:
        out["exclude"] = _list(exc)
    return out


def _client(c: str, props: dict[str, str], take: Any, file: str) -> dict[str, Any]:
    """The DC's client settings; a cluster-prefixed key overrides the top-level one."""
    vals: dict[str, str] = {}
    for key in _CLIENT_KEYS:
        v = take(f"{c}.{key}")
        if v is None:
            v = take(key)
        if v is not None:
            vals[key] = v.strip()
    out: dict[str, Any] = {}
    protocol = vals.get("security.protocol", "PLAINTEXT").upper()
    if "security.protocol" in vals:
        out["security_protocol"] = protocol
    # Kafka's Java clients ignore SSL settings without SSL and SASL settings without SASL (a
    # top-level setting may be meant for the other clusters); so do we.
    if "SSL" not in protocol:
        vals = {k: v for k, v in vals.items() if not k.startswith("ssl.")}
    if not protocol.startswith("SASL_"):
        vals = {k: v for k, v in vals.items() if not k.startswith("sasl.")}
    ssl: dict[str, str] = {}
    for kind, target in (("truststore", "cafile"), ("keystore", "certfile")):
        loc = vals.get(f"ssl.{kind}.location")
        if loc is None:
            continue
        if vals.get(f"ssl.{kind}.type", "JKS").upper() != "PEM":
            raise ConfigError(
                f"{file}: {c}.ssl.{kind}.type: aa's client reads PEM files only; allowed: PEM "
                f"(convert the {kind} to PEM and set {c}.ssl.{kind}.type = PEM)"
            )
        ssl[target] = loc
    if ssl:
        out["ssl"] = ssl
    if "sasl.mechanism" in vals or "sasl.jaas.config" in vals:
        sasl: dict[str, str] = {"mechanism": vals.get("sasl.mechanism", "GSSAPI").upper()}
        jaas = dict(_JAAS.findall(vals.get("sasl.jaas.config", "")))
        if "username" in jaas:
            sasl["username"] = jaas["username"]
        if "password" in jaas:
            sasl["password"] = jaas["password"]
        out["sasl"] = sasl
    return out


def _sections(raw: dict[str, Any], props: dict[str, str], take: Any, file: str) -> None:
    def flag(key: str) -> bool | None:
        take(key)
        return _bool(props, key, file)

    ts: dict[str, Any] = {}
    if (v := flag("sync.topic.configs.enabled")) is not None:
        ts["enabled"] = v
    if (s := take("refresh.topics.interval.seconds")) is not None:
        ts["interval_s"] = s
    ex = take("config.properties.exclude") or take("config.properties.blacklist")
    if ex is not None:
        ts["config_exclude"] = _list(ex)
    if ts:
        raw["topic_sync"] = ts
    cp: dict[str, Any] = {}
    if (v := flag("emit.checkpoints.enabled")) is not None:
        cp["enabled"] = v
    if (s := take("emit.checkpoints.interval.seconds")) is not None:
        cp["interval_s"] = s
    if (v := flag("sync.group.offsets.enabled")) is not None:
        cp["apply"] = v
    groups = take("groups")
    gex = take("groups.exclude") or take("groups.blacklist")
    if groups is not None or gex is not None:
        cp["groups"] = {"include": _list(groups) if groups else [".*"]}
        if gex is not None:
            cp["groups"]["exclude"] = _list(gex)
    if cp:
        raw["checkpoints"] = cp
    hb: dict[str, Any] = {}
    if (v := flag("emit.heartbeats.enabled")) is not None:
        hb["enabled"] = v
    if (s := take("emit.heartbeats.interval.seconds")) is not None:
        hb["interval_s"] = s
    if hb:
        raw["heartbeats"] = hb
    if (v := flag("emit.offset-syncs.enabled")) is not None:
        raw["offset_sync"] = {"enabled": v}


def load_mm2(path: str | Path) -> Topology:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the config file: {exc.strerror}") from None
    return read_mm2(text, str(p))
