"""The brokers a run uses: dedicated local clusters on free ports (default), or given ones."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from aa.dev import cluster as devcluster


def parse_bootstrap(raw: str) -> dict[str, str]:
    """``SF=host:port,NYC=host:port`` -> ``{"SF": "host:port", ...}``."""
    pairs = dict(part.split("=", 1) for part in raw.split(",") if "=" in part)
    if not pairs:
        raise SystemExit(f"--bootstrap {raw!r}: expected SF=host:port,NYC=host:port[,LON=...]")
    return pairs


@contextlib.contextmanager
def dedicated(
    names: Sequence[str], *, heap: str = "512m", keep: Path | None = None
) -> Iterator[dict[str, str]]:
    """Start one fresh broker per DC in a temporary folder; stop them (and wipe it) on exit."""
    with tempfile.TemporaryDirectory(prefix="aa-bench-", dir=keep) as tmp:
        root = Path(tmp)
        ports = devcluster.free_ports(2 * len(names))
        specs = [
            devcluster.DevCluster(n, ports[2 * i], ports[2 * i + 1], root / n)
            for i, n in enumerate(names)
        ]
        try:
            devcluster.up(specs, heap=heap)
            yield {s.name: s.bootstrap for s in specs}
        finally:
            devcluster.stop_all(specs)
