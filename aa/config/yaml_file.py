"""Read a topology YAML file (``yaml.safe_load``) into a validated topology."""

from __future__ import annotations

from pathlib import Path

import yaml

from aa.config.build import build_topology
from aa.config.model import Topology
from aa.errors import ConfigError


def read_yaml(text: str, file: str = "<string>") -> Topology:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}") from None
    return build_topology(raw, file)


def load_yaml(path: str | Path) -> Topology:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the config file: {exc.strerror}") from None
    return read_yaml(text, str(p))
