"""`aa dev`: local development clusters (up, down, status, fetch; produce and consume in
:mod:`aa.cli.dev_data`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from aa.cli import dev_data
from aa.cli.progress import working
from aa.dev import artifacts, cluster
from aa.logs import configure

HOME_HELP = "state folder (default: $AA_DEV_HOME or ~/.local/state/aa/dev)"


def _home_option(p: argparse.ArgumentParser, default: object) -> None:
    """``--home DIR``, before the action (``aa dev --home X up``) or after it (``aa dev up
    --home X``): both were written by users; only the first worked."""
    p.add_argument("--home", type=Path, default=default, help=HOME_HELP)


def register(sub: Any) -> None:
    dev = sub.add_parser("dev", help="run real local Kafka clusters, one per DC")
    _home_option(dev, None)
    dsub = dev.add_subparsers(dest="dev_command", metavar="ACTION", required=True)

    p = dsub.add_parser("up", help="fetch Kafka if needed and start one cluster per DC")
    p.add_argument(
        "--dcs",
        default=",".join(cluster.DEFAULT_DCS),
        help="comma-separated DC names (default: SF,NYC,LON)",
    )
    p.add_argument(
        "--base-port",
        type=int,
        default=cluster.DEFAULT_BASE_PORT,
        help=f"the first DC's broker port (default {cluster.DEFAULT_BASE_PORT}); its controller "
        "listens on the next port",
    )
    p.add_argument(
        "--port-step",
        type=int,
        default=cluster.DEFAULT_PORT_STEP,
        help=f"DC i listens on base + i x step (default {cluster.DEFAULT_PORT_STEP})",
    )
    p.add_argument(
        "--heap",
        default=cluster.DEFAULT_HEAP,
        help=f"JVM heap per broker (default {cluster.DEFAULT_HEAP})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=cluster.START_TIMEOUT_S,
        help=f"seconds to wait for health (default {cluster.START_TIMEOUT_S:.0f})",
    )
    _kafka_version_option(p)
    _home_option(p, argparse.SUPPRESS)
    p.set_defaults(func=_up)

    p = dsub.add_parser("down", help="stop the brokers aa dev up started")
    p.add_argument("--dcs", default="", help="only these DCs (default: all)")
    p.add_argument("--wipe", action="store_true", help="also delete their data and logs")
    _home_option(p, argparse.SUPPRESS)
    p.set_defaults(func=_down)

    p = dsub.add_parser("status", help="show each DC's broker and whether it answers")
    _home_option(p, argparse.SUPPRESS)
    p.set_defaults(func=_status)

    dev_data.register(dsub, lambda p: _home_option(p, argparse.SUPPRESS))

    p = dsub.add_parser("fetch", help="resolve Kafka, MirrorMaker 2 (and Spark's Kafka source)")
    p.add_argument("--refresh", action="store_true", help="fetch again even if cached")
    p.add_argument(
        "--spark",
        action="store_true",
        help="also fetch Spark's Kafka source for the installed PySpark",
    )
    p.add_argument(
        "--registry",
        action="store_true",
        help="also build a local schema registry (Apicurio; for schema translation's tests)",
    )
    _kafka_version_option(p)
    p.set_defaults(func=_fetch)


def _kafka_version_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kafka-version",
        default=None,
        metavar="X.Y.Z",
        help=f"Kafka release (default: ${artifacts.KAFKA_VERSION_ENV} or "
        f"{artifacts.KAFKA_VERSION}; {artifacts.COMPAT_KAFKA_VERSION} is supported too)",
    )


_root = dev_data.home_of


def _names(raw: str) -> list[str]:
    return [n for n in (part.strip() for part in raw.split(",")) if n]


def _up(args: argparse.Namespace) -> int:
    root = _root(args)
    planned = cluster.plan(
        _names(args.dcs),
        root,
        base_port=args.base_port,
        port_step=args.port_step,
        version=args.kafka_version,
    )
    for version in sorted({c.kafka_version for c in planned}):
        wanted = artifacts.kafka_artifacts(version)
        if not (wanted.home / artifacts.MANIFEST).exists():
            with working(
                f"first run: fetching Apache Kafka {version} with Maven into {wanted.home} "
                "(a minute or two; later runs start at once)"
            ):
                artifacts.fetch(wanted)
    began = time.monotonic()
    _human(args)
    with working(f"starting {len(planned)} broker(s), waiting until each answers"):
        results = cluster.up(planned, heap=args.heap, timeout=args.timeout)
    took = time.monotonic() - began
    for c, started in results:
        state = "started" if started else "already running"
        print(
            f"{c.name:<8} {c.bootstrap:<22} kafka {c.kafka_version:<8} {state:<16} "
            f"logs: {c.log_dir}"
        )
    print(f"{len(results)} cluster(s) healthy in {took:.1f}s")
    return 0


def _human(args: argparse.Namespace) -> None:
    """`aa dev` prints one line per cluster itself: its log events (``broker_started``,
    ``broker_stopped``) only with ``--log-level INFO`` or lower, not beside those lines."""
    if getattr(args, "log_level", None) is None:
        fmt = getattr(args, "log_format", None)
        configure(json=None if fmt is None else fmt == "json", level="WARNING")


def _down(args: argparse.Namespace) -> int:
    _human(args)
    stopped = cluster.down(_root(args), _names(args.dcs) or None, wipe=args.wipe)
    print(
        f"stopped: {', '.join(stopped) or 'nothing was running'}"
        + (" (data wiped)" if args.wipe else "")
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    rows = cluster.status(_root(args))
    if not rows:
        print("no local clusters: run `aa dev up`")
        return 1
    for s in rows:
        pid = str(s.pid) if s.pid else "-"
        print(
            f"{s.cluster.name:<8} {s.cluster.bootstrap:<22} kafka {s.cluster.kafka_version:<8} "
            f"pid {pid:<8} {s.detail}"
        )
    return 0 if all(s.healthy for s in rows) else 1


def _fetch(args: argparse.Namespace) -> int:
    version = artifacts.kafka_version(args.kafka_version)
    jars = artifacts.fetch(artifacts.kafka_artifacts(version), refresh=args.refresh)
    print(f"kafka {version}: {len(jars)} jars in {jars[0].parent}")
    if args.spark:
        from aa.dev.spark import spark_kafka_jars

        sjars = spark_kafka_jars(refresh=args.refresh)
        print(f"spark kafka source: {len(sjars)} jars in {sjars[0].parent}")
    if args.registry:
        from aa.dev.registry import fetch_registry

        with working("building the schema registry with Maven (first time: a few minutes)"):
            rjars = fetch_registry(refresh=args.refresh)
        print(f"schema registry: {len(rjars)} jars in {rjars[0].parent}")
    return 0
