"""MirrorMaker 2 dedicated-mode properties: parsed into the same model, and the same plan, as
the equivalent YAML."""

# ruff: noqa: E501  (one case per line reads best as a table)
from __future__ import annotations

import re
from pathlib import Path

import pytest

from aa.config import TopicFilter, load_config, read_mm2, read_yaml
from aa.config.mm2 import parse_properties
from aa.errors import ConfigError
from aa.policy.plan import build_plan, render

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def test_properties_syntax() -> None:
    text = r"""
# comment
! also a comment
a = 1
b: 2
c 3
d=x\
   y
e = tab\there
f = \u0041
g.h->i.enabled=true
empty =
"""
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "xy",
        "e": "tab\there",
        "f": "A",
        "g.h->i.enabled": "true",
        "empty": "",
    }


def test_example_files_give_the_same_model_and_plan() -> None:
    yaml_t = load_config(EXAMPLES / "topology.yaml")
    mm2_t = load_config(EXAMPLES / "mm2.properties")
    assert mm2_t == yaml_t
    assert mm2_t.ignored == ("tasks.max",)
    listing = {
        "SF": {"users": 6, "orders.eu": 3, "orders.tmp1": 1, "other": 1, "__consumer_offsets": 50},
        "NYC": {"users": 6, "orders.eu": 2},
        "LON": {"heartbeats": 1},
    }

    def plan(t: object) -> str:
        text = render(build_plan(t, listing), show_file=False)  # type: ignore[arg-type]
        return "\n".join(line for line in text.splitlines() if not line.startswith("ignored"))

    assert plan(mm2_t) == plan(yaml_t)
    assert "orders.eu (3p) -> orders.eu (2p)  grows to 3p" in plan(yaml_t)


DEFAULT_POLICY = """
clusters = A, B
A.bootstrap.servers = a1:9092, a2:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
A->B.topics = users, orders\\\\..*
B->A.enabled = true
replication.policy.separator = _
sync.topic.configs.enabled = false
refresh.topics.interval.seconds = 15
config.properties.exclude = min.insync.replicas, retention.bytes
emit.checkpoints.interval.seconds = 5
sync.group.offsets.enabled = true
groups = app-.*
groups.blacklist = app-test.*
emit.heartbeats.enabled = false
exactly.once.source.support = enabled
offset-syncs.topic.replication.factor = 1
"""

EQUIVALENT_YAML = """
datacenters:
  A: {bootstrap: "a1:9092, a2:9092"}
  B: {bootstrap: "b:9092"}
flows:
  - A->B: {topics: [users, "orders\\\\..*"]}
  - B->A
loop_prevention: {mode: prefix, separator: _, style: rename}
delivery: exactly-once
topic_sync: {enabled: false, interval_s: 15, config_exclude: [min.insync.replicas, retention.bytes]}
checkpoints: {interval_s: 5, apply: true, groups: {include: [app-.*], exclude: [app-test.*]}}
heartbeats: {enabled: false}
"""


def test_default_replication_policy_is_prefix_rename_and_sections_map() -> None:
    t = read_mm2(DEFAULT_POLICY, "mm2.properties")
    assert t.loop_prevention.mode == "prefix"
    assert t.loop_prevention.style == "rename"
    assert t.loop_prevention.separator == "_"
    assert t.flow("A->B").topics == TopicFilter(("users", r"orders\..*"), ())
    assert t.flow("B->A").topics is None
    assert t.delivery == "exactly-once"
    assert t.ignored == ("offset-syncs.topic.replication.factor",)
    assert t == read_yaml(EQUIVALENT_YAML)


def test_security_settings_per_cluster_and_top_level() -> None:
    t = read_mm2(
        """
clusters = A, B
A.bootstrap.servers = a:9093
B.bootstrap.servers = b:9092
security.protocol = SASL_SSL
sasl.mechanism = SCRAM-SHA-256
sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="mirror" password="${MM2_PW}";
ssl.truststore.type = PEM
ssl.truststore.location = /etc/ca.pem
B.security.protocol = PLAINTEXT
A->B.enabled = true
""",
        "x.properties",
    )
    a = t.datacenter("A")
    assert (a.security_protocol, a.sasl_mechanism, a.sasl_username) == (
        "SASL_SSL",
        "SCRAM-SHA-256",
        "mirror",
    )
    assert a.ssl_truststore == "/etc/ca.pem"
    assert a.sasl_password is not None
    assert a.sasl_password.reveal({"MM2_PW": "pw"}) == "pw"
    assert "pw" not in repr(t)
    b = t.datacenter("B")  # the top-level SSL/SASL settings do not apply to a PLAINTEXT cluster
    assert (b.security_protocol, b.ssl_truststore, b.sasl_mechanism) == ("PLAINTEXT", None, None)


def test_identity_policy_is_headers_and_legacy_blacklist() -> None:
    t = read_mm2(
        """
clusters = A, B
A.bootstrap.servers = a:1
B.bootstrap.servers = b:1
A->B.enabled = true
B->A.enabled = true
topics = .*
topics.blacklist = secret.*
replication.policy.class = IdentityReplicationPolicy
"""
    )
    assert t.loop_prevention.mode == "headers"
    assert t.topics == TopicFilter((".*",), ("secret.*",))
    assert t.graph.kind == "full-mesh"


BASE = "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"

MM2_ERRORS = [
    ("no-clusters", "A.bootstrap.servers = a:1\n", r"clusters: missing"),
    (
        "no-bootstrap",
        "clusters = A, B\nA.bootstrap.servers = a:1\nA->B.enabled = true\n",
        r"B\.bootstrap\.servers: missing for cluster B",
    ),
    ("no-flow", BASE, r"no flow is enabled; allowed: `A->B\.enabled = true`"),
    (
        "flow-unknown-cluster",
        BASE + "A->C.enabled = true\n",
        r"A->C\.enabled: names a cluster not in `clusters`; allowed: A, B",
    ),
    (
        "flow-bool",
        BASE + "A->B.enabled = yes\n",
        r"A->B\.enabled: invalid value 'yes'; allowed: true \| false",
    ),
    (
        "topics-disabled-flow",
        BASE + "A->B.enabled = true\nB->A.topics = x\n",
        r"B->A\.topics: set for a flow that is not enabled",
    ),
    (
        "policy",
        BASE + "A->B.enabled = true\nreplication.policy.class = com.acme.MyPolicy\n",
        r"replication\.policy\.class: 'com\.acme\.MyPolicy' is not supported; allowed: .*DefaultReplicationPolicy",
    ),
    (
        "store-type",
        BASE + "A->B.enabled = true\nA.security.protocol = SSL\nA.ssl.truststore.type = BKS\n",
        r"A\.ssl\.truststore\.type: invalid value 'BKS'; allowed: JKS \| PKCS12 \| PEM",
    ),
    (
        "keytab-without-principal",
        BASE
        + "A->B.enabled = true\nA.security.protocol = SASL_PLAINTEXT\nA.sasl.jaas.config = "
        + 'com.sun.security.auth.module.Krb5LoginModule required keyTab="/k";\n',
        r"A\.sasl\.jaas\.config: keytab without principal.*\(aa field datacenters\.A\.sasl\.keytab\)",
    ),
    (
        "regex",
        BASE + "A->B.enabled = true\ntopics = a, (b\n",
        r"^mm2\.properties: topics: invalid regular expression '\(b'.*\(aa field topics\.include\[1\]\)",
    ),
    (
        "regex-nested-set",
        BASE + "A->B.enabled = true\nA->B.topics = [[\n",
        r"^mm2\.properties: A->B\.topics: (ambiguous|invalid) regular expression '\[\['",
    ),
    (
        "bad-cluster-name",
        "clusters = A.1, B\nA.1.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n",
        r"no flow is enabled|invalid DC name",
    ),
]


@pytest.mark.parametrize(
    ("text", "pattern"), [c[1:] for c in MM2_ERRORS], ids=[c[0] for c in MM2_ERRORS]
)
def test_invalid_mm2_file_names_the_property(text: str, pattern: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_mm2(text, "mm2.properties")
    assert str(info.value).startswith("mm2.properties: ")
    assert re.search(pattern, str(info.value)), str(info.value)
