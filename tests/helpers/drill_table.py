"""Render the figures the drills wrote to ``$AA_DRILL_REPORT`` as the markdown table of
docs/reliability.md: ``python -m tests.helpers.drill_table drills.jsonl``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

HEAD = (
    "| drill | Kafka | delivery | fault | sent | lost | duplicated | recovery | "
    "what the metrics showed | flow restarts |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def _metrics(row: dict[str, Any]) -> str:
    shown = []
    if "lag_during" in row:
        shown.append(f"lag {row['lag_before']:.0f} → {row['lag_during']:.0f}")
    if "lag_peak" in row:
        shown.append(f"peak lag {row['lag_peak']:.0f}")
    if row.get("lag_read_failures"):
        shown.append(f"{row['lag_read_failures']:.0f} failed lag reads")
    if "peak_rss_mb" in row:
        shown.append(f"peak RSS {row['peak_rss_mb']} MB")
    if "reconcile" in row:
        clean = not any(row["reconcile"].values())
        shown.append("digests equal" if row.get("digests_equal") else "digests DIFFER")
        shown.append("reconcile clean" if clean else f"reconcile {row['reconcile']}")
    return "; ".join(shown) or "-"


def table(lines: list[bytes]) -> str:
    rows = [HEAD]
    for line in lines:
        if not line.strip():
            continue
        r = orjson.loads(line)
        rows.append(
            f"| {r['drill']} | {r['kafka']} | {r['delivery']} | {r['faults']} | {r['sent']} | "
            f"{r['lost']} | {r['duplicated']} | {r['recovery_s']} s | {_metrics(r)} | "
            f"{r.get('flow_restarts', '-')} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(table(Path(sys.argv[1]).read_bytes().splitlines()))
