"""A flow's ``schemas`` section (issue 34): read from the flow's item of the ``flows`` list,
nested ``source``/``target`` registries, errors naming the field the user wrote and the fix,
and the password never shown."""

from __future__ import annotations

import pytest

from aa.config import Topology, read_yaml
from aa.config.registries import SchemaTranslation
from aa.config.topic_filter import TopicFilter
from aa.errors import ConfigError
from aa.mirror.build import flow_settings

pytestmark = pytest.mark.unit

DCS = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
"""


def _load(schemas: str) -> Topology:
    return read_yaml(DCS + "flows:\n  - SF->NYC:\n      schemas:\n" + schemas + "  - NYC->SF\n")


def test_a_flow_reads_its_registries_and_framed_topics() -> None:
    topo = _load(
        "        source: {url: 'http://sf-registry:8081/'}\n"
        "        target: {url: 'https://nyc-registry/apis/ccompat/v7', username: mirror,\n"
        "                 password: '${NYC_REGISTRY}', cafile: /etc/ca.pem}\n"
        "        values: [orders, 'users\\..*']\n"
        "        keys: [orders]\n"
        "        cache_size: 500\n",
    )
    s = topo.flow("SF->NYC").schemas
    assert s is not None
    assert s.source_url == "http://sf-registry:8081"  # the trailing / dropped
    assert s.target_url == "https://nyc-registry/apis/ccompat/v7"
    assert (s.target_username, s.target_cafile) == ("mirror", "/etc/ca.pem")
    assert s.target_password is not None
    assert s.target_password.reveal({"NYC_REGISTRY": "hunter2"}) == "hunter2"
    assert "hunter2" not in repr(s)
    assert s.values == TopicFilter(("orders", "users\\..*"), (".*heartbeats",))
    assert s.keys == TopicFilter(("orders",))
    assert s.cache_size == 500
    assert topo.flow("NYC->SF").schemas is None
    settings = flow_settings(topo, topo.flow("SF->NYC"))
    assert settings.schemas == s


def test_defaults_translate_every_value_and_no_key() -> None:
    s = _load("        source: {url: 'http://a:1'}\n        target: {url: 'http://b:2'}\n")
    schemas = s.flow("SF->NYC").schemas
    assert schemas == SchemaTranslation("http://a:1", "http://b:2")
    assert schemas.values == TopicFilter((".*",), (".*heartbeats",))  # aa's own: JSON
    assert schemas.keys.include == ()
    assert schemas.ids_topic == "aa.schema-ids.{source}.internal"


@pytest.mark.parametrize(
    ("schemas", "message"),
    [
        (
            "        target: {url: 'http://b:2'}\n",
            "flows[0].SF->NYC.schemas.source: missing",
        ),
        (
            "        source: {username: u}\n        target: {url: 'http://b:2'}\n",
            "flows[0].SF->NYC.schemas.source.url: missing",
        ),
        (
            "        source: {url: 'ftp://a'}\n        target: {url: 'http://b:2'}\n",
            "flows[0].SF->NYC.schemas.source.url: invalid URL 'ftp://a'",
        ),
        (
            "        source: {url: 'http://u:p@a'}\n        target: {url: 'http://b:2'}\n",
            "credentials apart",
        ),
        (
            "        source: {url: 'http://a', user: x}\n        target: {url: 'http://b:2'}\n",
            "unknown field 'user' in flows[0].SF->NYC.schemas.source; allowed: url, username, "
            "password, cafile; did you mean 'username'?",
        ),
        (
            "        source: {url: 'http://a', username: x}\n        target: {url: 'http://b'}\n",
            "flows[0].SF->NYC.schemas.source: username without password",
        ),
        (
            "        source: {url: 'http://a'}\n        target: {url: 'http://b'}\n"
            "        value: [x]\n",
            "did you mean 'values'?",
        ),
        (
            "        source: {url: 'http://a'}\n        target: {url: 'http://b'}\n"
            "        values: ['[[a-z][0-9]]']\n",
            "flows[0].SF->NYC.schemas.values[0]: ambiguous regular expression",
        ),
    ],
)
def test_an_invalid_schemas_section_names_the_field_and_the_fix(
    schemas: str,
    message: str,
) -> None:
    with pytest.raises(ConfigError) as err:
        _load(schemas)
    assert message in str(err.value), str(err.value)
