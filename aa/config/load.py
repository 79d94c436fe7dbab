"""``load_config(path)``: pick the reader by the file's extension."""

from __future__ import annotations

from pathlib import Path

from aa.config.mm2 import load_mm2
from aa.config.model import Topology
from aa.config.yaml_file import load_yaml
from aa.errors import ConfigError


def load_config(path: str | Path) -> Topology:
    """Load and validate a topology: ``.yaml``/``.yml`` (aa's format) or ``.properties``
    (a MirrorMaker 2 dedicated-mode file)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return load_yaml(p)
    if suffix == ".properties":
        return load_mm2(p)
    raise ConfigError(
        f"{p}: unknown config file type {suffix or '(none)'!r}; allowed: .yaml, .yml "
        "(aa topology) or .properties (MirrorMaker 2)"
    )
