"""Read a topology YAML file (``yaml.safe_load``) into a validated topology."""

from __future__ import annotations

from pathlib import Path

import yaml

from aa.config.build import build_topology
from aa.config.files import read_config_text
from aa.config.model import Topology
from aa.errors import ConfigError

MAX_VALUES = 100_000
"""Values a topology may hold once YAML aliases are expanded (real ones hold hundreds)."""
MAX_DEPTH = 64
"""Nesting a topology may have (real ones nest four or five levels)."""


def read_yaml(text: str, file: str = "<string>") -> Topology:
    _check_brackets(text, file)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"{file}: not valid YAML: nested too deeply; a topology nests a few levels"
        ) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ConfigError(f"{file}: not valid YAML: {exc}") from None
    _check_size(raw, file)
    return build_topology(raw, file)


def _check_brackets(text: str, file: str) -> None:
    """Refuse deep ``[[[…`` / ``{{{…`` nesting before PyYAML recurses into it (slowly, until
    RecursionError). Brackets inside quotes count too: a topology never needs 64 open ones."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    for c in text:
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    f"{file}: not valid YAML: nested too deeply (more than {MAX_DEPTH} open "
                    "brackets); a topology nests a few levels"
                )
        elif c in "]}" and depth:
            depth -= 1


def _check_size(raw: object, file: str) -> None:
    """Refuse alias bombs ("billion laughs") and deep nesting before anything walks or prints
    the document: count values as aliases expand them, without recursion, and stop early."""
    count = 0
    stack: list[tuple[object, int]] = [(raw, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigError(
                f"{file}: the document expands to more than {MAX_VALUES} values (YAML aliases "
                "repeating large anchors?); a topology holds a few hundred"
            )
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"{file}: values nest more than {MAX_DEPTH} levels; a topology nests a few"
            )
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node)
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def load_yaml(path: str | Path) -> Topology:
    p = Path(path)
    return read_yaml(read_config_text(p), str(p))
