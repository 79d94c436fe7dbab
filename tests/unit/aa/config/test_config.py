"""Topology config: valid files load into the frozen model with the documented defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from aa.config import (
    Flow,
    OnError,
    Secret,
    TopicFilter,
    Tuning,
    client_kwargs,
    load_config,
    read_yaml,
)
from aa.config.model import DEFAULT_CONFIG_EXCLUDE
from aa.errors import ConfigError

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"

THREE = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""


def test_minimal_file_gets_defaults() -> None:
    t = read_yaml(THREE)
    assert t.dc_names == ("SF", "NYC", "LON")
    assert len(t.flows) == 6
    assert t.graph.kind == "full-mesh"
    assert t.topics == TopicFilter((".*",), ())
    assert t.loop_prevention.mode == "headers"
    assert t.delivery == "at-least-once"
    assert t.tuning == Tuning()
    assert t.topic_sync.config_exclude == DEFAULT_CONFIG_EXCLUDE
    assert t.on_error == OnError("fail", "aa.dead-letter.{source}")
    assert (t.metrics.host, t.metrics.port) == ("127.0.0.1", 9464)
    assert t.metrics.lag_interval_s == 10.0
    assert read_yaml(THREE + "metrics: {lag_interval_s: 0.5}\n").metrics.lag_interval_s == 0.5
    assert t.checkpoints.apply is False
    assert t.heartbeats.topic == "heartbeats"


def test_example_topology_loads() -> None:
    t = load_config(EXAMPLES / "topology.yaml")
    assert [dc.bootstrap for dc in t.datacenters] == [
        "127.0.0.1:19092",
        "127.0.0.1:29092",
        "127.0.0.1:39092",
    ]
    assert t.topics.include == ("users", r"orders\..*")


def test_model_is_frozen() -> None:
    t = read_yaml(THREE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.delivery = "exactly-once"  # type: ignore[misc]


def test_hub_and_spoke_directions() -> None:
    base = THREE + "flows: {hub-and-spoke: {hub: NYC, direction: %s}}\n"
    inbound = read_yaml(base % "inbound")
    assert {f.name for f in inbound.flows} == {"SF->NYC", "LON->NYC"}
    outbound = read_yaml(base % "outbound")
    assert {f.name for f in outbound.flows} == {"NYC->SF", "NYC->LON"}
    both = read_yaml(base % "both")
    assert len(both.flows) == 4
    assert both.graph.hub == "NYC"


def test_explicit_flow_list_with_per_flow_topics() -> None:
    t = read_yaml(
        THREE
        + """
flows:
  - SF->NYC
  - "NYC -> SF":
      topics: {include: [users], exclude: ["users\\\\.tmp"]}
"""
    )
    assert t.flow("SF->NYC").topics is None
    assert t.flow("NYC->SF").topics == TopicFilter(("users",), (r"users\.tmp",))
    assert t.topics_for(t.flow("NYC->SF")).include == ("users",)
    assert t.inbound("SF") == (Flow("NYC", "SF", TopicFilter(("users",), (r"users\.tmp",))),)


def test_topics_plain_list_is_include() -> None:
    t = read_yaml(THREE + "topics: [users, 'orders\\..*']\n")
    assert t.topics == TopicFilter(("users", r"orders\..*"), ())


def test_prefix_options() -> None:
    t = read_yaml(THREE + "loop_prevention: {mode: prefix, separator: _, style: book}\n")
    assert (t.loop_prevention.mode, t.loop_prevention.separator) == ("prefix", "_")
    assert t.loop_prevention.style == "book"
    assert read_yaml(THREE + "loop_prevention: prefix\n").loop_prevention.style == "rename"


def test_on_error_dead_letter_template() -> None:
    t = read_yaml(
        THREE + "on_error: {action: dead-letter, dead_letter_topic: 'aa.dlq.{source}-{target}'}\n"
    )
    assert t.on_error.dead_letter_for(Flow("SF", "NYC")) == "aa.dlq.SF-NYC"


def test_sections_for_later_features() -> None:
    t = read_yaml(
        THREE
        + """
offset_sync: {enabled: false}
checkpoints: {groups: {include: ["app-.*"]}, interval_s: 5, apply: true}
heartbeats: {interval_s: 2.5, topic: hb}
topic_sync: {enabled: false, interval_s: 10, config_exclude: [min.insync.replicas]}
tuning: {compression: zstd, max_in_flight: 2, commit_interval_s: 0.5, linger_ms: 0}
"""
    )
    assert not t.offset_sync.enabled
    assert t.checkpoints.groups.include == ("app-.*",)
    assert t.checkpoints.groups.exclude  # MM2's default group exclusions kept
    assert t.checkpoints.apply
    assert t.heartbeats.interval_s == 2.5
    assert t.topic_sync.config_exclude == ("min.insync.replicas",)
    assert t.tuning.compression == "zstd"
    assert t.tuning.linger_ms == 0


SASL = """
datacenters:
  SF:
    bootstrap: "a:9093,b:9093"
    security_protocol: SASL_SSL
    ssl: {cafile: /etc/ca.pem}
    sasl: {mechanism: SCRAM-SHA-512, username: mirror, password: "${AA_TEST_PW}-x"}
  NYC: "127.0.0.1:29092"
"""


def test_password_is_secret_and_resolved_only_when_asked() -> None:
    t = read_yaml(SASL, "t.yaml")
    dc = t.datacenter("SF")
    assert isinstance(dc.sasl_password, Secret)
    assert "AA_TEST_PW" not in repr(t)
    assert "**" in repr(dc)
    assert dc.sasl_password.references == ("AA_TEST_PW",)
    assert dc.sasl_password.reveal({"AA_TEST_PW": "s3cret"}) == "s3cret-x"
    with pytest.raises(ConfigError, match=r"t\.yaml: datacenters\.SF\.sasl\.password.*AA_TEST_PW"):
        dc.sasl_password.reveal({})


def test_client_kwargs_for_sasl_ssl(tmp_path: Path) -> None:
    t = read_yaml(SASL.replace("ssl: {cafile: /etc/ca.pem}", "ssl: {}"))
    kw = client_kwargs(t.datacenter("SF"), env={"AA_TEST_PW": "pw"})
    assert kw["bootstrap_servers"] == "a:9093,b:9093"
    assert kw["security_protocol"] == "SASL_SSL"
    assert kw["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (kw["sasl_plain_username"], kw["sasl_plain_password"]) == ("mirror", "pw-x")
    assert "ssl_context" in kw
    plain = client_kwargs(t.datacenter("NYC"))
    assert plain == {"bootstrap_servers": "127.0.0.1:29092", "security_protocol": "PLAINTEXT"}


def test_load_config_picks_reader_by_extension(tmp_path: Path) -> None:
    f = tmp_path / "topo.yml"
    f.write_text(THREE)
    assert load_config(f).dc_names == ("SF", "NYC", "LON")
    g = tmp_path / "topo.json"
    g.write_text("{}")
    with pytest.raises(ConfigError, match=r"topo\.json.*allowed: \.yaml, \.yml"):
        load_config(g)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
