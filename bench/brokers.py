"""The brokers a run uses: dedicated local clusters on free ports (default), or given ones."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from aa.dev import cluster as devcluster


def parse_bootstrap(raw: str) -> dict[str, str]:
    """``SF=host:port,NYC=host:port`` -> ``{"SF": "host:port", ...}``."""
    pairs = dict(part.split("=", 1) for part in raw.split(",") if "=" in part)
    if not pairs:
        raise SystemExit(f"--bootstrap {raw!r}: expected SF=host:port,NYC=host:port[,LON=...]")
    return pairs


@dataclass(frozen=True, slots=True)
class WanPorts:
    """A DC reachable the long way: its broker's ``WAN`` listener, advertised as ``proxy``
    (where ``bench.wan`` listens and relays to ``listener`` with a delay)."""

    proxy: str
    listener: str


def wan_properties(c: devcluster.DevCluster, listener_port: int, proxy_port: int) -> tuple:  # type: ignore[type-arg]
    """Broker settings that add a second listener, ``WAN``, advertised at the proxy's port:
    a client bootstrapped through the proxy learns the proxy's address from the metadata, so
    every later connection also takes the long way; local clients keep PLAINTEXT."""
    return (
        (
            "listeners",
            f"PLAINTEXT://127.0.0.1:{c.port},CONTROLLER://127.0.0.1:{c.controller_port},"
            f"WAN://127.0.0.1:{listener_port}",
        ),
        ("advertised.listeners", f"PLAINTEXT://127.0.0.1:{c.port},WAN://127.0.0.1:{proxy_port}"),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,WAN:PLAINTEXT",
        ),
    )


@dataclass(frozen=True, slots=True)
class Brokers:
    bootstraps: dict[str, str]
    wan: dict[str, WanPorts] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    """The broker JVMs' pids by DC (dedicated brokers only), for their CPU use."""
    data_dirs: dict[str, Path] = field(default_factory=dict)
    """The brokers' log folders by DC (dedicated brokers only), for a topic's bytes on disk."""


@contextlib.contextmanager
def dedicated(
    names: Sequence[str],
    *,
    heap: str = "512m",
    keep: Path | None = None,
    wan: Sequence[str] = (),
) -> Iterator[Brokers]:
    """Start one fresh broker per DC in a temporary folder; stop them (and wipe it) on exit.
    DCs in ``wan`` get a second listener for a delaying proxy (see :func:`wan_properties`)."""
    with tempfile.TemporaryDirectory(prefix="aa-bench-", dir=keep) as tmp:
        root = Path(tmp)
        ports = devcluster.free_ports(2 * len(names) + 2 * len(wan))
        extra = iter(ports[2 * len(names) :])
        specs, wan_ports = [], {}
        for i, n in enumerate(names):
            spec = devcluster.DevCluster(n, ports[2 * i], ports[2 * i + 1], root / n)
            if n in wan:
                listener, proxy = next(extra), next(extra)
                spec = replace(spec, extra_properties=wan_properties(spec, listener, proxy))
                wan_ports[n] = WanPorts(f"127.0.0.1:{proxy}", f"127.0.0.1:{listener}")
            specs.append(spec)
        try:
            devcluster.up(specs, heap=heap)
            pids = {s.name: pid for s in specs if (pid := devcluster.pid_of(s)) is not None}
            data = {s.name: s.data_dir for s in specs}
            yield Brokers({s.name: s.bootstrap for s in specs}, wan_ports, pids, data)
        finally:
            devcluster.stop_all(specs)
