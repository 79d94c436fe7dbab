"""What the commands that read a topology share, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def topology_command(sub: Any, name: str, summary: str, description: str | None = None) -> Any:
    """The parser of subcommand ``name`` of ``sub``, with the ``--config FILE`` it reads."""
    p = sub.add_parser(name, help=summary, description=description)
    p.add_argument(
        "--config",
        type=Path,
        required=True,
        help="topology file: aa YAML (.yaml/.yml) or MirrorMaker 2 dedicated-mode .properties",
    )
    return p
