"""The reference docs are checked against the code they describe: every field of the topology
model is in docs/configuration.md, and every option of every `aa` command is in docs/cli.md."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from aa.cli.main import build_parser
from aa.config import model
from aa.config.build import DC_FIELDS, SASL_FIELDS, SSL_FIELDS, TOP_LEVEL

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[3] / "docs"
NOT_IN_FILE = {"source_file", "ignored", "graph", "flows", "datacenters"}


def _section_fields(cls: type, prefix: str) -> Iterator[str]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in NOT_IN_FILE:
            continue
        t = hints[f.name]
        if dataclasses.is_dataclass(t) and t is not model.TopicFilter:
            yield from _section_fields(t, f"{prefix}{f.name}.")  # type: ignore[arg-type]
        else:
            yield f"{prefix}{f.name}"


def test_every_topology_field_is_in_the_configuration_reference() -> None:
    doc = (DOCS / "configuration.md").read_text()
    missing = [s for s in TOP_LEVEL if f"## `{s}`" not in doc and f"`{s}`" not in doc]
    for name in _section_fields(model.Topology, ""):
        leaf = name.rsplit(".", 1)[-1]
        if f"`{name}`" not in doc and f"`{leaf}`" not in doc:
            missing.append(name)
    dc = [*DC_FIELDS, *(f"ssl.{f}" for f in SSL_FIELDS), *(f"sasl.{f}" for f in SASL_FIELDS)]
    missing += [
        f"datacenters.X.{f}" for f in dc if f"`{f}`" not in doc and f not in ("ssl", "sasl")
    ]
    assert not missing, f"document these in docs/configuration.md: {missing}"


def _options(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (f"{path} {name}", "")
                yield from _options(sub, f"{path} {name}")
        elif action.option_strings and "-h" not in action.option_strings:
            yield (path, max(action.option_strings, key=len))


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    doc = (DOCS / "cli.md").read_text()
    missing = []
    for command, option in _options(build_parser(), "aa"):
        if not option:
            if f"`{command}" not in doc:
                missing.append(command)
        elif f"`{option}" not in doc:
            missing.append(f"{command} {option}")
    assert not missing, f"document these in docs/cli.md: {missing}"
