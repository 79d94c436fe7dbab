"""aa's own topic, group and transactional-id names are spelled in one place
(:mod:`aa.config.names`), and a flow made directly gets the same names and defaults as one built
from a topology file (they used to disagree: ``aa.dead-letter`` vs ``aa.dead-letter.SF``)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from aa.config import Flow, read_yaml
from aa.config import names as internal
from aa.mirror.build import flow_settings
from aa.mirror.settings import FlowSettings
from aa.observe.http import MetricsServer
from aa.observe.metrics import Metrics
from aa.policy.naming import is_internal

pytestmark = pytest.mark.unit

AA = Path(__file__).resolve().parents[4] / "aa"
THREE = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""
IDENTITY = {"source", "target", "source_client", "target_client", "group_id"}


def test_flow_settings_made_directly_equal_those_built_from_a_default_topology() -> None:
    built = flow_settings(read_yaml(THREE), Flow("SF", "NYC"))
    direct = FlowSettings("SF", "NYC", {}, {}, group_id=built.group_id)
    differ = {
        f.name: (getattr(direct, f.name), getattr(built, f.name))
        for f in dataclasses.fields(FlowSettings)
        if f.name not in IDENTITY and getattr(direct, f.name) != getattr(built, f.name)
    }
    assert not differ, f"(made directly, built from the topology): {differ}"


def test_a_flow_made_directly_dead_letters_to_the_documented_topic() -> None:
    assert FlowSettings("SF", "NYC", {}, {}, group_id="g").dead_letter_topic == "aa.dead-letter.SF"


def test_every_name_aa_gives_its_own_things_is_internal_and_never_copied() -> None:
    s = flow_settings(read_yaml(THREE), Flow("SF", "NYC"))
    topology = read_yaml(THREE)
    for name in (
        s.dead_letter_topic,
        s.eos_offsets_topic,
        s.sync_topic,
        s.group_id,
        s.transactional_id,
        topology.checkpoints.topic.format(source="SF", target="NYC"),
    ):
        assert name.startswith(internal.PREFIX), name
        assert is_internal(name), name


def _names_built_in(path: Path) -> list[str]:
    """String templates and f-strings in ``path`` that build a name starting with ``aa.``
    from a DC name (module paths and logger names are plain constants without placeholders)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and str(head.value).startswith("aa."):
                found.append(f"{path.relative_to(AA.parent)}:{node.lineno}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("aa.")
            and "{" in node.value
        ):
            found.append(f"{path.relative_to(AA.parent)}:{node.lineno}")
    return found


def test_internal_names_are_spelled_only_in_aa_config_names() -> None:
    spelled = [
        where
        for path in sorted(AA.rglob("*.py"))
        if path != AA / "config" / "names.py"
        for where in _names_built_in(path)
    ]
    assert not spelled, f"build these names with aa.config.names instead: {spelled}"


def test_metrics_server_defaults_are_the_config_defaults() -> None:
    """``metrics.port`` 9464 was written in three places (model, parser, server); they agreed,
    now the parser and the server take it from the model."""
    server = MetricsServer(Metrics(), lambda: (True, {}))
    topology = read_yaml(THREE)
    assert (server.host, server.port) == (topology.metrics.host, topology.metrics.port)
