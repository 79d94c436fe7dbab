"""Entry point of the `aa` command.

Each command group lives in its own module under ``aa.cli`` and exposes
``register(subparsers) -> None``; the parser it adds sets ``func`` to a callable taking the parsed
``argparse.Namespace`` and returning an exit code. To add a command, write the module and list it
in ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from aa import __version__
from aa.cli.stopping import Stopped, catch_sigterm
from aa.errors import AaError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
CLOSED_PIPE_EXIT = 141
"""The exit code when the reader of aa's output went away (``aa plan | head -1``): what a shell
reports for a tool stopped by SIGPIPE. Nothing is wrong with the DCs."""

COMMAND_MODULES: tuple[str, ...] = (
    "aa.cli.dev",
    "aa.cli.run",
    "aa.cli.operate",
    "aa.cli.plan",
    "aa.cli.offsets",
    "aa.cli.failover",
    "aa.cli.lag",
    "aa.cli.status",
    "aa.cli.reconcile",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aa", description="Active-active replication for Apache Kafka."
    )
    parser.add_argument("--version", action="version", version=f"aa {__version__}")
    parser.add_argument(
        "--log-format",
        choices=["json", "console"],
        default=None,
        help="log format (default: console on a terminal, JSON otherwise)",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=None,
        help=f"{', '.join(LOG_LEVELS)} (default: $AA_LOG_LEVEL or INFO)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _plain_help(parser)
    return parser


def _plain_help(parser: argparse.ArgumentParser) -> None:
    """Every description and help text of ``parser`` and its subcommands as plain text (the
    commands write them with reStructuredText literals: ``aa run``)."""
    from aa.cli.options import plain  # imported after catch_sigterm() (see main)

    parser.description = plain(parser.description)
    for action in parser._actions:
        action.help = plain(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = plain(choice.help)
            for sub in action.choices.values():
                _plain_help(sub)


# Options whose values may start with "-" (a time before now: ``--at -2m``); argparse would
# take such a value for an option, so it is glued to its option (``--at=-2m``) before parsing.
DASH_VALUE_OPTIONS = frozenset({"--at", "--since", "--until"})


def _dash_value(text: str) -> bool:
    return text.startswith("-") and not text.startswith("--")


def glue_dash_values(argv: Sequence[str]) -> list[str]:
    """``["--at", "-2m"]`` -> ``["--at=-2m"]`` for the options in ``DASH_VALUE_OPTIONS``."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if a in DASH_VALUE_OPTIONS and i + 1 < len(args) and _dash_value(args[i + 1]):
            out.append(f"{a}={args[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _log_level(args: argparse.Namespace) -> str | None:
    """``--log-level``, else ``$AA_LOG_LEVEL`` checked like it."""
    env = os.environ.get("AA_LOG_LEVEL")
    if args.log_level is None and env and env.upper() not in LOG_LEVELS:
        raise AaError(f"AA_LOG_LEVEL {env}: use one of {', '.join(LOG_LEVELS)}")
    level: str | None = args.log_level
    return level


def _check_flow(args: argparse.Namespace) -> None:
    """Every command's ``--flow``: a value the shell cut at ``>`` is named with the fix."""
    from aa.cli.options import flow_option
    from aa.config import load_config

    if not isinstance(getattr(args, "flow", None), str):
        return
    try:
        topology = load_config(args.config) if getattr(args, "config", None) else None
    except AaError:
        topology = None  # the command reports it itself
    flow_option(args.flow, topology)


def _closed_pipe() -> int:
    """The reader of stdout went away: write nothing more (nor at exit), say nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return CLOSED_PIPE_EXIT


STOPPED_EXIT = 143
"""Exit code of a command other than ``aa run`` stopped by SIGTERM (128 + 15); ``aa run``, whose
normal end is a SIGTERM, exits 0."""


def main(argv: Sequence[str] | None = None) -> int:
    # First of all, before the heavy imports (the commands, aiokafka, logging): a SIGTERM from
    # here on stops the process cleanly (aa.cli.stopping).
    catch_sigterm()
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    except Stopped:
        return 0 if "run" in argv else STOPPED_EXIT


def _main(argv: Sequence[str]) -> int:
    from aiokafka.errors import KafkaError

    from aa.logs import configure

    parser = build_parser()
    args = parser.parse_args(glue_dash_values(argv))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        level = _log_level(args)
        configure(json=None if args.log_format is None else args.log_format == "json", level=level)
        _check_flow(args)
        code: int = args.func(args)
        sys.stdout.flush()  # inside the try: a closed pipe shows here for buffered output
    except BrokenPipeError:
        return _closed_pipe()
    except AaError as exc:
        print(f"aa: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (KafkaError, OSError, TimeoutError) as exc:
        # A cluster failed mid-command (the commands probe the DCs they need first, so this is
        # a DC going away meanwhile, or a local resource): one line, the traceback on DEBUG.
        if (level or "").upper() == "DEBUG":
            raise
        print(
            f"aa: error: {type(exc).__name__}: {exc}: check that the DCs in --config are "
            "reachable and retry (--log-level DEBUG shows the traceback)",
            file=sys.stderr,
        )
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
