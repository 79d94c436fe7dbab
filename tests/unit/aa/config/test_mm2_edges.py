"""MM2 import on the edges (issue 10 item 5): per-flow keys overlay the top-level ones,
unsupported values of ``exactly.once.source.support`` are refused or warned about, and errors
name the MM2 key the user wrote."""

from __future__ import annotations

import re

import pytest
from structlog.testing import capture_logs

from aa.config import TopicFilter, read_mm2
from aa.errors import ConfigError

pytestmark = pytest.mark.unit

BASE = "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"


def test_per_flow_topics_keep_the_global_topics_exclude() -> None:
    t = read_mm2(
        BASE + "A->B.enabled = true\nA->B.topics = orders.*\ntopics.exclude = .*\\\\.internal\n"
    )
    assert t.flow("A->B").topics == TopicFilter(("orders.*",), (r".*\.internal",))


def test_per_flow_exclude_keeps_the_global_topics_include() -> None:
    t = read_mm2(
        BASE + "A->B.enabled = true\ntopics = users, orders\nA->B.topics.exclude = orders\n"
    )
    assert t.flow("A->B").topics == TopicFilter(("users", "orders"), ("orders",))


def test_per_flow_exclude_overrides_the_global_exclude() -> None:
    t = read_mm2(
        BASE + "A->B.enabled = true\nA->B.topics = x.*\nA->B.topics.exclude = x1\n"
        "topics.exclude = x2\n"
    )
    assert t.flow("A->B").topics == TopicFilter(("x.*",), ("x1",))


@pytest.mark.parametrize("value", ["sometimes", "true", "yes", ""])
def test_exactly_once_source_support_unsupported_value_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_mm2(BASE + f"A->B.enabled = true\nexactly.once.source.support = {value}\n", "m.p")
    msg = str(info.value)
    assert msg.startswith("m.p: exactly.once.source.support: ")
    assert "allowed: enabled | disabled | preparing" in msg


def test_exactly_once_source_support_preparing_warns_and_copies_at_least_once() -> None:
    with capture_logs() as logs:
        t = read_mm2(BASE + "A->B.enabled = true\nexactly.once.source.support = preparing\n")
    assert t.delivery == "at-least-once"
    warned = [e for e in logs if e["event"] == "mm2_key_approximated"]
    assert [e["key"] for e in warned] == ["exactly.once.source.support"]


def test_exactly_once_source_support_disabled_is_at_least_once_and_per_cluster_key() -> None:
    t = read_mm2(BASE + "A->B.enabled = true\nexactly.once.source.support = DISABLED\n")
    assert t.delivery == "at-least-once"
    t = read_mm2(BASE + "A->B.enabled = true\nB.exactly.once.source.support = enabled\n")
    assert t.delivery == "exactly-once"


def test_exactly_once_per_cluster_mixed_is_refused() -> None:
    text = (
        BASE + "A->B.enabled = true\nB->A.enabled = true\n"
        "B.exactly.once.source.support = enabled\nA.exactly.once.source.support = disabled\n"
    )
    with pytest.raises(ConfigError, match=r"A\.exactly\.once\.source\.support.*one delivery"):
        read_mm2(text, "m.p")


MM2_KEY_ERRORS = [
    ("refresh.topics.interval.seconds = soon", r"^m\.p: refresh\.topics\.interval\.seconds"),
    ("emit.checkpoints.interval.seconds = -1", r"^m\.p: emit\.checkpoints\.interval\.seconds"),
    ("emit.heartbeats.interval.seconds = x", r"^m\.p: emit\.heartbeats\.interval\.seconds"),
    ("A->B.topics = (x", r"^m\.p: A->B\.topics"),
    ("topics.exclude = a, [b", r"^m\.p: topics\.exclude"),
    ("groups = (", r"^m\.p: groups"),
    ("A.security.protocol = TLS", r"^m\.p: A\.security\.protocol"),
]


@pytest.mark.parametrize(("line", "pattern"), MM2_KEY_ERRORS, ids=[c[0] for c in MM2_KEY_ERRORS])
def test_mm2_value_errors_name_the_key_the_user_wrote(line: str, pattern: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_mm2(BASE + "A->B.enabled = true\n" + line + "\n", "m.p")
    assert re.search(pattern, str(info.value)), str(info.value)
