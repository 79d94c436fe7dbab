"""Data sets for the reconciliation tests: origin records and their copies with the provenance
headers the mirror would add, as plain rows (unit tests) or records to produce (integration)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from aa.provenance import LOCAL, MIRRORED_AT, SourceRef
from conflict import HLC, Event
from conflict.ids import new_id

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
