"""Read a MirrorMaker 2 dedicated-mode properties file into the same topology model.

Mapping (MM2 property → aa field):

* ``clusters = A, B`` → ``datacenters``; ``A.bootstrap.servers`` → ``datacenters.A.bootstrap``;
  ``[A.]security.protocol``, ``[A.]sasl.mechanism`` (Kafka's default: GSSAPI),
  ``[A.]sasl.jaas.config`` (the options its login module reads: ``username``/``password``,
  ``clientId``/``clientSecret``/``scope``, ``keyTab``/``principal``),
  ``[A.]sasl.oauthbearer.token.endpoint.url``, ``[A.]sasl.kerberos.service.name``, and
  ``[A.]ssl.{truststore,keystore}.{location,password}`` and ``[A.]ssl.key.password`` (JKS,
  PKCS12 or PEM stores, read as they are) → the DC's client settings (top-level client
  settings apply to every cluster, a cluster's own override them).
* ``A->B.enabled = true`` → the flow A→B; ``A->B.topics`` / ``A->B.topics.exclude`` → that
  flow's own topic filter. As in MM2, a per-flow key overlays the top-level one of the same name
  only: ``A->B.topics`` with a top-level ``topics.exclude`` keeps that exclude, and
  ``A->B.topics.exclude`` with a top-level ``topics`` keeps that include.
* ``topics``, ``topics.exclude`` (legacy ``topics.blacklist``) → ``topics`` (MM2 lists are
  comma-separated regexes).
* ``replication.policy.class``: ``DefaultReplicationPolicy`` → ``loop_prevention: prefix``
  (style ``rename``), ``IdentityReplicationPolicy`` → ``headers``;
  ``replication.policy.separator`` → the prefix separator.
* every other setting with MM2 keys (``topic_sync``, ``checkpoints``, ``heartbeats``,
  ``offset_sync``): as its definition in :mod:`aa.config.model` says (``mm2=``; the
  configuration reference lists them);
* ``[A.]exactly.once.source.support``: ``enabled`` → ``delivery: exactly-once``; ``disabled`` →
  at-least-once; ``preparing`` (a Connect rolling-upgrade stage aa does not have) →
  at-least-once with a warning; any other value is an error. aa has one delivery mode, so
  per-cluster values that disagree are an error too.

Every other key is kept in :attr:`Topology.ignored` (``aa plan`` lists them; one close to a key
aa reads is logged as ``mm2_key_ignored`` with the key it likely misspells). Errors about a
value name the MM2 key the user wrote (with aa's field in brackets), not only aa's field.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aa.config.build import build_topology
from aa.config.files import read_config_text
from aa.config.kinds import Boolean, split_list
from aa.config.mm2_security import CLIENT_KEYS
from aa.config.mm2_security import client as _client
from aa.config.model import Topology
from aa.config.properties import parse_properties as parse_properties  # re-exported
from aa.config.schema import definitions, iter_mm2_keys
from aa.errors import ConfigError
from aa.logs import get_logger

POLICIES = {
    "DefaultReplicationPolicy": "prefix",
    "IdentityReplicationPolicy": "headers",
}
EOS_VALUES = ("enabled", "disabled", "preparing")
"""Connect's ``exactly.once.source.support`` values."""
_PAIR = re.compile(r"^([^.\s]+)->([^.\s]+)\.(.+)$")


def _bool(props: dict[str, str], key: str, file: str) -> bool | None:
    return Boolean().mm2_value(props[key], key, file) if key in props else None


def read_mm2(text: str, file: str = "<string>") -> Topology:
    """Build the topology an MM2 dedicated-mode properties file describes."""
    props = parse_properties(text, file)
    used: set[str] = set()

    def take(key: str) -> str | None:
        if key in props:
            used.add(key)
            return props[key]
        return None

    keys: dict[str, str] = {}
    """aa field path -> the MM2 key its value came from (for error messages)."""
    try:
        return _read(props, take, used, keys, file)
    except ConfigError as exc:
        raise _renamed(exc, keys, file) from None


def _renamed(exc: ConfigError, keys: dict[str, str], file: str) -> ConfigError:
    """``exc`` with aa's field path replaced by the MM2 key the value came from."""
    msg = str(exc)
    head = f"{file}: "
    if not msg.startswith(head):
        return exc
    path, sep, rest = msg[len(head) :].partition(": ")
    if not sep:
        return exc
    for prefix in sorted(keys, key=len, reverse=True):
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return ConfigError(f"{head}{keys[prefix]}: {rest} (aa field {path})")
    return exc


def _read(
    props: dict[str, str], take: Any, used: set[str], keys: dict[str, str], file: str
) -> Topology:

    clusters_raw = take("clusters")
    if clusters_raw is None:
        raise ConfigError(f"{file}: clusters: missing; allowed: a list like `clusters = A, B`")
    clusters = split_list(clusters_raw)
    datacenters: dict[str, Any] = {}
    for c in clusters:
        bootstrap = take(f"{c}.bootstrap.servers")
        if bootstrap is None:
            raise ConfigError(f"{file}: {c}.bootstrap.servers: missing for cluster {c}")
        dc: dict[str, Any] = {"bootstrap": bootstrap}
        keys[f"datacenters.{c}.bootstrap"] = f"{c}.bootstrap.servers"
        dc.update(_client(c, props, take, file, keys))
        datacenters[c] = dc

    glob = _topic_filter("topics", take)  # per-flow keys overlay these, key by key
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
        own = _topic_filter(pair + ".topics", take)
        if own is None:
            flows.append(pair)
            continue
        tf = {**(glob or {}), **own}
        where = f"flows[{len(flows)}].{pair}.topics"
        for part in ("include", "exclude"):
            if part in tf:
                keys[f"{where}.{part}"] = (own if part in own else glob or {})[part + "_key"]
        flows.append({pair: {"topics": _plain(tf)}})
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
    if glob:
        raw["topics"] = _plain(glob)
        keys.update(
            {
                f"topics.{part}": glob[part + "_key"]
                for part in ("include", "exclude")
                if part in glob
            }
        )
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
    keys["loop_prevention.separator"] = "replication.policy.separator"
    if mode == "prefix":
        raw["loop_prevention"] = {"mode": "prefix", "separator": sep or ".", "style": "rename"}
    else:
        raw["loop_prevention"] = "headers"
    if _exactly_once(clusters, take, file):
        raw["delivery"] = "exactly-once"
    _sections(raw, take, file, keys)
    unused = tuple(sorted(k for k in props if k not in used))
    topology = build_topology(raw, file, ignored=unused)
    log = get_logger("aa.config")
    for key in unused:
        if near := suggest(key, clusters):
            log.warning("mm2_key_ignored", file=file, key=key, did_you_mean=near)
    return topology


_FLOW_KEYS = ("enabled", "topics", "topics.exclude", "topics.blacklist")
_CLUSTER_KEYS = ("bootstrap.servers", "exactly.once.source.support", *CLIENT_KEYS)


def suggest(key: str, clusters: Sequence[str]) -> str | None:
    """The key aa reads that an unused ``key`` most likely misspells, if any is close."""

    def near(word: str, known: Sequence[str]) -> str | None:
        found = difflib.get_close_matches(word, known, n=1, cutoff=0.8)
        return found[0] if found else None

    m = _PAIR.match(key)
    if m:
        tail = near(m.group(3), _FLOW_KEYS)
        return f"{m.group(1)}->{m.group(2)}.{tail}" if tail else None
    head, _, rest = key.partition(".")
    if head in clusters and rest:
        tail = near(rest, _CLUSTER_KEYS)
        return f"{head}.{tail}" if tail else None
    return near(key, ("clusters", *CLIENT_KEYS, *(k for k, _ in iter_mm2_keys(Topology))))


def _exactly_once(clusters: list[str], take: Any, file: str) -> bool:
    """``exactly.once.source.support``, top level or per cluster: True for ``enabled``."""
    log = get_logger("aa.config")
    seen: dict[str, str] = {}
    for key in (
        "exactly.once.source.support",
        *(f"{c}.exactly.once.source.support" for c in clusters),
    ):
        raw = take(key)
        if raw is None:
            continue
        value = raw.strip().lower()
        if value not in EOS_VALUES:
            raise ConfigError(
                f"{file}: {key}: invalid value {raw!r}; allowed: {' | '.join(EOS_VALUES)}"
            )
        if value == "preparing":
            log.warning(
                "mm2_key_approximated",
                file=file,
                key=key,
                value=raw,
                meaning="at-least-once: aa has no 'preparing' stage; set enabled for exactly-once",
            )
        seen[key] = "enabled" if value == "enabled" else "disabled"
    if len(set(seen.values())) > 1:
        listed = ", ".join(f"{k} = {v}" for k, v in seen.items())
        raise ConfigError(
            f"{file}: {', '.join(seen)}: disagree ({listed}); aa has one delivery mode for every "
            "flow: set the same value everywhere (or only the top-level key)"
        )
    return "enabled" in seen.values()


def _plain(tf: dict[str, Any]) -> dict[str, list[str]]:
    return {k: v for k, v in tf.items() if not k.endswith("_key")}


def _topic_filter(prefix: str, take: Any) -> dict[str, Any] | None:
    """``prefix`` and ``prefix.exclude`` (legacy ``.blacklist``) as {include, exclude}; only the
    parts given, each with the key it came from under ``<part>_key``."""
    inc = take(prefix)
    exc_key = prefix + ".exclude"
    exc = take(exc_key)
    legacy = take(prefix + ".blacklist")
    if exc is None and legacy is not None:
        exc, exc_key = legacy, prefix + ".blacklist"
    if inc is None and exc is None:
        return None
    out: dict[str, Any] = {}
    if inc is not None:
        out["include"], out["include_key"] = split_list(inc), prefix
    if exc is not None:
        out["exclude"], out["exclude_key"] = split_list(exc), exc_key
    return out


_BY_HAND = frozenset({"topics", "delivery", "loop_prevention.mode", "loop_prevention.separator"})
"""Settings whose MM2 keys are read above: they combine keys across clusters and flows (per-flow
topic overlays, per-cluster exactly-once support) or translate values (policy class)."""


def _sections(raw: dict[str, Any], take: Any, file: str, keys: dict[str, str]) -> None:
    """Every other setting with MM2 keys, as its definition says (aa.config.model)."""
    for d in definitions(Topology):
        if not d.setting.mm2 or d.path in _BY_HAND:
            continue
        value, came = d.setting.kind.from_mm2(d.setting.mm2, take, file)
        if value is None:
            continue
        raw.setdefault(d.section, {})[d.name] = value
        for part, key in came.items():
            keys[f"{d.path}.{part}" if part else d.path] = key


def load_mm2(path: str | Path) -> Topology:
    p = Path(path)
    text = read_config_text(p, " (non-ASCII characters may also be written as \\uXXXX)")
    return read_mm2(text, str(p))
