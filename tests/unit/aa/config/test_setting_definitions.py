"""One definition per setting (aa.config.model, declared with aa.config.schema.setting): every
definition is complete and consistent, and the YAML reader, the MM2 reader and the per-flow
settings all follow it."""

from __future__ import annotations

import dataclasses
import typing
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from aa.config import Flow, TopicFilter, mm2, read_mm2, read_yaml, reference
from aa.config.fields import Field
from aa.config.kinds import Boolean, Choice, Filter, Integer, Number, StrList, Template
from aa.config.model import Datacenter, Topology
from aa.config.schema import REQUIRED, Definition, definitions, settings_of, value_at
from aa.errors import ConfigError
from aa.mirror.build import flow_settings
from aa.mirror.settings import FlowSettings
from aa.policy.plan import build_plan, render

pytestmark = pytest.mark.unit

DEFS = definitions(Topology)
IDS = [d.path for d in DEFS]
THREE = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""
MM2_BASE = (
    "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"
)
FLOW_IDENTITY = {"source", "target", "source_client", "target_client", "group_id", "schemas"}
"""FlowSettings attributes that come from the flow itself (its DCs, its ``schemas`` section)."""
FLOW_FIXED = {"offsets_topic", "transaction_timeout_ms", "partition_set", "assigned"}
"""FlowSettings attributes no topology setting feeds (the exactly-once offsets topic name and
the transaction timeout are aa's own choices, not configurable; a partition set's run is given
its set and partitions by aa.mirror.partition_sets)."""


def yaml_shape(value: Any) -> Any:
    """A model value as a user would write it in YAML."""
    if isinstance(value, TopicFilter):
        return {"include": list(value.include), "exclude": list(value.exclude)}
    if isinstance(value, tuple):
        return list(value)
    return value


def of_type(value: Any, hint: Any) -> bool:
    if typing.get_origin(hint) is Literal:
        return value in typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return isinstance(value, tuple) and all(isinstance(v, str) for v in value)
    if hint is float:
        return isinstance(value, float)
    return isinstance(value, hint)


@pytest.mark.parametrize("d", DEFS, ids=IDS)
def test_every_setting_has_a_doc_and_a_default_of_its_type_that_its_own_rule_accepts(
    d: Definition,
) -> None:
    assert d.setting.doc.strip(), f"{d.path}: no doc"
    assert d.setting.kind.allowed(), f"{d.path}: its kind does not say what is allowed"
    assert of_type(d.default, d.type), f"{d.path}: default {d.default!r} is not a {d.type}"
    read = d.setting.kind.read(Field("t.yaml", d.path, yaml_shape(d.default)))
    assert read == d.default, f"{d.path}: the default does not read back as itself"
    if isinstance(d.setting.kind, Choice):
        assert set(d.setting.kind.options) == set(typing.get_args(d.type))


def test_setting_paths_are_unique_and_a_section_has_at_most_one_shorthand() -> None:
    assert not [p for p, n in Counter(IDS).items() if n > 1]
    per_section = Counter(d.section for d in DEFS if d.setting.shorthand)
    assert all(n == 1 for n in per_section.values()), per_section


def test_every_mm2_key_maps_to_exactly_one_setting() -> None:
    keys = Counter(k for d in DEFS for k in d.setting.mm2)
    assert not [k for k, n in keys.items() if n > 1], keys


# A value per MM2 key that differs from what the base file gives (MM2's default policy is
# prefix mode, so the policy class switches to headers).
MM2_EXAMPLES = {
    "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    "replication.policy.separator": "_",
    "exactly.once.source.support": "enabled",
    "replication.factor": "2",
}


def _mm2_example(key: str, d: Definition) -> str:
    if key in MM2_EXAMPLES:
        return MM2_EXAMPLES[key]
    kind = d.setting.kind
    if isinstance(kind, Boolean):
        return "false" if d.default else "true"
    if isinstance(kind, Number | Integer):
        return "7"
    if isinstance(kind, StrList | Filter):
        return "x.*, y"
    raise AssertionError(f"no example MM2 value for {key} ({d.path})")


MM2_KEYS = [(k, d) for d in DEFS for k in d.setting.mm2]


@pytest.mark.parametrize(("key", "d"), MM2_KEYS, ids=[k for k, _ in MM2_KEYS])
def test_each_mm2_key_sets_its_setting_and_nothing_else(key: str, d: Definition) -> None:
    base = read_mm2(MM2_BASE, "m.p")
    t = read_mm2(f"{MM2_BASE}{key} = {_mm2_example(key, d)}\n", "m.p")
    assert key not in t.ignored
    changed = [e.path for e in DEFS if value_at(t, e) != value_at(base, e)]
    assert changed == [d.path], f"{key} changed {changed}, not only {d.path}"


def test_every_flow_settings_attribute_is_fed_by_exactly_one_setting() -> None:
    fed = Counter(d.setting.flow for d in DEFS if d.setting.flow)
    attrs = {f.name for f in dataclasses.fields(FlowSettings)}
    assert not [a for a, n in fed.items() if n > 1], fed
    assert set(fed) <= attrs, set(fed) - attrs
    assert attrs - set(fed) == FLOW_IDENTITY | FLOW_FIXED
    # a flow setting applies to each flow, but for the process budget build_flows splits
    split = {d.path for d in DEFS if d.setting.flow and d.setting.applies != "flow"}
    assert split == {"tuning.memory_budget_mb"}


# A non-default YAML value per setting a flow uses.
FLOW_EXAMPLES: dict[str, Any] = {
    "tuning.compression": "zstd",
    "on_error.action": "dead-letter",
    "on_error.dead_letter_topic": "dlq.{target}.{source}",
    "offset_sync.topic": "syncs.{source}-{target}",
    "topic_sync.config_exclude": ["retention.ms"],
    "topic_sync.replication_factor": 3,
    "delivery": "exactly-once",
}


def test_a_flow_gets_every_per_flow_setting_of_its_topology() -> None:
    per_flow = [d for d in DEFS if d.setting.flow]
    sections: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for d in per_flow:
        if d.path in FLOW_EXAMPLES:
            value = FLOW_EXAMPLES[d.path]
        elif isinstance(d.setting.kind, Boolean):
            value = not d.default
        else:
            value = d.default * 2 if d.default else 5
        (sections.setdefault(d.section, {}) if d.section else top)[d.name] = value
    import yaml

    doc = {**yaml.safe_load(THREE), **top, **sections}
    topology = read_yaml(yaml.safe_dump(doc), "t.yaml")
    built = flow_settings(topology, Flow("SF", "NYC"))
    default = flow_settings(read_yaml(THREE), Flow("SF", "NYC"))
    same = [
        d.path
        for d in per_flow
        if getattr(built, d.setting.flow) == getattr(default, d.setting.flow)
    ]  # type: ignore[arg-type]
    assert not same, f"set in the topology but not in the flow's settings: {same}"
    assert built.dead_letter_topic == "dlq.NYC.SF"
    assert built.compression == "zstd"
    assert built.config_exclude == frozenset({"retention.ms"})


@pytest.mark.parametrize(
    ("yaml_text", "hint"),
    [
        ("tuning: {linger: 5}\n", "did you mean 'linger_ms'?"),
        ("topic_sync: {interval: 5}\n", "did you mean 'interval_s'?"),
        ("heartbeat: {enabled: false}\n", "did you mean 'heartbeats'?"),
        ("checkpoints: {group: [a]}\n", "did you mean 'groups'?"),
    ],
)
def test_an_unknown_key_names_the_nearest_known_one(yaml_text: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_yaml(THREE + yaml_text, "topo.yaml")
    message = str(info.value)
    assert message.startswith("topo.yaml: unknown field ")
    assert "; allowed: " in message
    assert message.endswith(hint), message


def test_an_unknown_key_far_from_every_known_one_gets_no_guess() -> None:
    with pytest.raises(ConfigError) as info:
        read_yaml(THREE + "tuning: {zzzzzz: 5}\n", "topo.yaml")
    assert "did you mean" not in str(info.value)


def test_kinds_say_what_they_allow() -> None:
    assert Integer(lo=0, hi=65535).allowed() == "integer 0..65535"
    assert Number().allowed() == "number > 0"
    assert Template(("source",)).allowed() == "topic name; may use `{source}`"
    assert Choice(("a", "b")).allowed() == "`a`, `b`"


def test_configuration_reference_tables_match_the_definitions() -> None:
    path = Path(__file__).resolve().parents[4] / "docs" / "configuration.md"
    text = path.read_text()
    assert sorted(reference.block_names(text)) == sorted(reference.blocks()), (
        "docs/configuration.md needs one `<!-- BEGIN settings: NAME -->` block per section"
    )
    assert reference.update(text) == text, (
        "docs/configuration.md is out of date: run `python -m aa.config.reference`"
    )


DC_DEFS = settings_of(Datacenter)


@pytest.mark.parametrize("d", DC_DEFS, ids=[d.key for d in DC_DEFS])
def test_every_datacenter_setting_has_a_doc_and_a_default_its_kind_accepts(d: Definition) -> None:
    assert d.setting.doc.strip()
    assert d.setting.kind.allowed()
    assert d.setting.applies == "datacenter"
    if d.default is REQUIRED:
        assert d.setting.required
    elif d.default is not None:
        assert d.setting.kind.read(Field("t.yaml", d.key, d.default)) == d.default


def test_datacenter_mm2_keys_are_those_the_mm2_reader_takes() -> None:
    declared = {
        k.removeprefix("[A.]") for d in DC_DEFS for k in d.setting.mm2 if k.startswith("[A.]")
    }
    # the two *.type keys only qualify the locations (aa reads PEM only); not settings
    assert declared == set(mm2.CLIENT_KEYS) - {"ssl.truststore.type", "ssl.keystore.type"}
    t = read_mm2(MM2_BASE.replace("a:1", "a:9") + "B.security.protocol = SSL\n", "m.p")
    assert (t.datacenter("A").bootstrap, t.datacenter("B").security_protocol) == ("a:9", "SSL")


def test_a_mistyped_mm2_key_is_not_ignored_silently() -> None:
    """An MM2 key aa does not know is kept in `ignored` (MM2 files carry many aa does not use);
    one that is close to a key aa reads is named with that key, in the log and in `aa plan`."""
    text = MM2_BASE + "sync.topic.config.enabled = false\nA.bootstrap.server = x:1\ntasks.max = 4\n"
    with capture_logs() as logs:
        t = read_mm2(text, "m.p")
    assert set(t.ignored) == {"sync.topic.config.enabled", "A.bootstrap.server", "tasks.max"}
    near = {e["key"]: e["did_you_mean"] for e in logs if e["event"] == "mm2_key_ignored"}
    assert near == {
        "sync.topic.config.enabled": "sync.topic.configs.enabled",
        "A.bootstrap.server": "A.bootstrap.servers",
    }
    shown = render(build_plan(t, {}), show_file=False)
    assert "sync.topic.config.enabled (did you mean sync.topic.configs.enabled?)" in shown
    assert "tasks.max" in shown


hostile_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.sampled_from(DEFS), value=hostile_values)
def test_fuzz_any_value_for_any_setting_is_read_or_refused_naming_it(
    d: Definition, value: Any
) -> None:
    """Each setting's kind, fed anything YAML can hold: a value or a ConfigError that names the
    file and the setting's path (never another exception)."""
    import yaml

    doc = yaml.safe_load(THREE)
    if d.section:
        doc[d.section] = {d.name: value}
        if d.setting.required is False:
            required = [e for e in DEFS if e.section == d.section and e.setting.required]
            # prefix mode, so that separator and style apply
            mode = {"loop_prevention.mode": "prefix"}
            doc[d.section].update({e.name: mode.get(e.path, e.default) for e in required})
    else:
        doc[d.name] = value
    try:
        read_yaml(yaml.safe_dump(doc), "t.yaml")
    except ConfigError as exc:
        message = str(exc)
    else:
        return
    assert message.startswith("t.yaml: "), message
    # the one cross-field rule a single value can break names the DC it clashes with
    clash = d.path == "loop_prevention.separator" and "contains the prefix separator" in message
    assert d.path in message or clash, message
