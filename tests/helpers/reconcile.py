"""Data sets for the reconciliation tests: origin records and their copies with the provenance
headers the mirror would add, as plain rows (unit tests) or records to produce (integration)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from aa.cli.main import main as aa_main
from aa.provenance import LOCAL, MIRRORED_AT, SourceRef
from conflict import HLC, Event
from conflict.ids import new_id
from spark_reconcile.findings.divergent import events
from spark_reconcile.records import normalise
from spark_reconcile.source import raw_schema
from spark_reconcile.window import Window

T0 = 1_700_000_000_000


def event_value(key: str, hlc: tuple[int, int, str], payload: Any, type_: str = "set") -> bytes:
    """The record value of a new event."""
    ms, logical, dc = hlc
    return Event(new_id(ms), key, type_, dc, HLC(ms, logical, dc), payload).encode()[1]


@dataclass(frozen=True, slots=True)
class Row:
    """One record as it sits in one DC's single-partition topic."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = field(default_factory=tuple)
    ts: int = T0


def copy_of(row: Row, origin: str, target: str, topic: str, offset: int, lag_ms: int = 7) -> Row:
    prov = LOCAL.forwarded(origin, target, SourceRef(origin, topic, 0, offset))
    hs = (*row.headers, *prov.headers(), (MIRRORED_AT, str(row.ts + lag_ms).encode()))
    return replace(row, headers=hs)


def mesh(
    dcs: tuple[str, ...],
    topic: str,
    per_dc: int,
    *,
    events: bool = False,
    keys: int = 4,
    t0: int = T0,
) -> dict[str, list[Row]]:
    """Every DC writes ``per_dc`` records, then receives every other DC's records (full mesh)."""
    origin_rows: dict[str, list[Row]] = {}
    for n, dc in enumerate(dcs):
        rows = []
        for i in range(per_dc):
            ts = t0 + 1000 * i + n
            if events:
                value = event_value(f"k{i % keys}", (ts, 0, dc), {"by": dc, "i": i})
                key = f"k{i % keys}".encode()
            else:
                value, key = f"{dc}-v{i}".encode(), f"{dc}-k{i}".encode()
            rows.append(Row(key, value, (("app", b"x"),), ts))
        origin_rows[dc] = rows
    out = {dc: list(rows) for dc, rows in origin_rows.items()}
    for origin, rows in origin_rows.items():
        for target in dcs:
            if target != origin:
                out[target].extend(copy_of(r, origin, target, topic, i) for i, r in enumerate(rows))
    return out


def raw_rows(topic: str, data: dict[str, list[Row]], ltopic: str | None = None) -> list[Any]:
    """Rows in :data:`spark_reconcile.source.RAW_COLUMNS` order, offsets counted per DC."""
    return [
        (dc, topic, ltopic or topic, 0, off, r.key, r.value, r.ts, [list(h) for h in r.headers])
        for dc, rows in data.items()
        for off, r in enumerate(rows)
    ]


# The unit tests' small runs: three DCs in a full mesh, one hour, ``users`` event-sourced.
DCS = ("SF", "NYC", "LON")
WINDOW = Window(T0, T0 + 3_600_000, slack_ms=0)
RESOLVERS = {"users": "lww"}


def expected_flows(spark: Any) -> Any:
    """``origin, ltopic, target`` of the full mesh of :data:`DCS` for ``orders`` and ``users``."""
    rows = [(o, t, d) for t in ("orders", "users") for o in DCS for d in DCS if d != o]
    return spark.createDataFrame(rows, "origin string, ltopic string, target string")


def normalised(spark: Any, orders: dict[str, list[Row]], users: dict[str, list[Row]]) -> Any:
    """The normalised records of ``orders`` and ``users`` (every row decoded)."""
    raw = spark.createDataFrame(raw_rows("orders", orders) + raw_rows("users", users), raw_schema())
    return raw.transform(normalise(WINDOW, 60_000, RESOLVERS)).cache()


def values_from(df: Any) -> Callable[[Any], Any]:
    """``with_values`` for records that still carry ``value`` and ``headers``."""

    def attach(positions: Any) -> Any:
        cols = ["dc", "topic", "partition", "offset"]
        return positions.join(df.select(*cols, "value", "headers"), cols)

    return attach


def suspect_events(df: Any, suspect: Any) -> Any:
    """The events of the ``suspect`` keys (``ltopic, key_h``) with their ``value`` and
    ``headers``: what the job picks for divergent (``spark_reconcile.picked``)."""
    from pyspark.sql import functions as F

    evs = events(df, ("value", "headers")).withColumn("key_h", F.xxhash64("key"))
    keys = F.broadcast(suspect.select("ltopic", "key_h"))
    return evs.join(keys, ["ltopic", "key_h"], "left_semi")


def run_reconcile(config: Path, out: Path, since: int, until: int, *extra: str) -> tuple[int, Any]:
    """``aa reconcile`` of the users-* events in this process (the suite's Spark session serves
    it): its exit code and its summary (``None`` when it wrote none)."""
    code = aa_main(
        [
            "reconcile",
            "--config", str(config),
            "--since", str(since),
            "--until", str(until),
            "--out", str(out),
            "--master", "local[2]",
            "--shuffle-partitions", "2",
            "--events", "users-.*",
            "--bucket", "1m",
            *extra,
        ]
    )  # fmt: skip
    path = out / "summary.json"
    return code, orjson.loads(path.read_bytes()) if path.exists() else None
