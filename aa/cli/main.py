"""Entry point of the `aa` command.

Each command group lives in its own module under ``aa.cli`` and exposes
``register(subparsers) -> None``; the parser it adds sets ``func`` to a callable taking the parsed
``argparse.Namespace`` and returning an exit code. To add a command, write the module and list it
in ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from aa import __version__
from aa.errors import AaError
from aa.logs import configure

COMMAND_MODULES: tuple[str, ...] = (
    "aa.cli.dev",
    "aa.cli.run",
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
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING, ERROR")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure(
        json=None if args.log_format is None else args.log_format == "json", level=args.log_level
    )
    try:
        code: int = args.func(args)
    except AaError as exc:
        print(f"aa: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
