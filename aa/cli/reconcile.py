"""``aa reconcile``: the nightly PySpark job proving the DCs converged (and repairing them).

``aa`` never imports ``spark_reconcile`` at module import time (DESIGN: ``aa`` imports neither
``conflict`` nor ``spark_reconcile``); the lazy imports inside the functions below are the one
accepted exception, so ``aa run`` stays free of PySpark.
"""

from __future__ import annotations

import argparse
from typing import Any

from aa.cli.progress import working


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "reconcile",
        help="find missing, duplicated, looped and divergent data across DCs (PySpark)",
        description=__doc__.split("\n\n")[0].replace("``", "`"),
    )
    # Lazy import (the accepted exception to the dependency rule): options only, no PySpark.
    from spark_reconcile.options import add_arguments

    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spark_reconcile.job import run_cli  # lazy: PySpark is loaded only for this command

    with working("reconcile: Spark reads every DC and compares (each stage is logged)"):
        return run_cli(args)
