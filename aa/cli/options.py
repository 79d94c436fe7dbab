"""What the commands that read a topology share, declared once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aa.config import Topology
from aa.errors import AaError

_ROLE = re.compile(r":[a-z]+:`([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``|`([^`]*)`")


def plain(text: str | None) -> str | None:
    """A docstring as `--help` shows it: reStructuredText roles and literals (``aa plan``,
    :func:`x`) become their plain words."""
    if text is None:
        return None
    text = _ROLE.sub(lambda m: m.group(1).lstrip("~").rsplit(".", 1)[-1], text)
    return _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)


def topology_command(sub: Any, name: str, summary: str, description: str | None = None) -> Any:
    """The parser of subcommand ``name`` of ``sub``, with the ``--config FILE`` it reads."""
    p = sub.add_parser(name, help=plain(summary), description=plain(description))
    p.add_argument(
        "--config",
        type=Path,
        required=True,
        help="topology file: aa YAML (.yaml/.yml) or MirrorMaker 2 dedicated-mode .properties",
    )
    return p


def group_option(p: Any, what: str = "the consumer group") -> None:
    """``--group G``: an application's consumer group."""
    p.add_argument("--group", required=True, metavar="GROUP", help=what)


def flow_option(value: str | None, topology: Topology | None) -> str | None:
    """A ``--flow A->B`` value, refused with the fix when the shell cut it: unquoted, ``>`` is
    a redirection (``--flow SF->NYC`` passes ``SF-`` and writes a file named ``NYC``). Every
    command's ``--flow`` goes through here (:func:`aa.cli.main.main`)."""
    if value is None or not value.rstrip().endswith("-"):
        return value
    source = value.rstrip()[:-1]
    flows = [f.name for f in topology.flows] if topology is not None else [f"{source}->NYC"]
    shown = [f"'{name}'" for name in flows if name.startswith(f"{source}->")] or [
        f"'{name}'" for name in flows
    ]
    raise AaError(
        f"--flow {value}: the shell took '>' for a redirection (and wrote what followed it into a "
        f"file of that name): quote the flow, one of {', '.join(shown)}"
    )
