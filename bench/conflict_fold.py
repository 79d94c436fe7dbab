"""Fold throughput of conflict's resolvers on one core: events/s for LWW, field-level LWW and
pycrdt documents (plus the other built-ins), through the Materializer as an application would.

    python -m bench.conflict_fold [--events 200000] [--keys 1000]
"""

from __future__ import annotations

import argparse
import base64
import random
import time
from typing import Any

import orjson
import pycrdt

from conflict import HLC, Event, Materializer, ResolverRegistry
from conflict.ids import new_id

DCS = ("SF", "NYC", "LON")


def _payload(resolver: str, rng: random.Random, i: int) -> tuple[str, Any]:
    if resolver == "field-lww":
        return "patch", {rng.choice("abcdef"): i}
    if resolver == "document":
        doc: pycrdt.Doc[Any] = pycrdt.Doc()
        doc.get("root", type=pycrdt.Map)[rng.choice("abcdef")] = i
        return "yjs", {"update": base64.b64encode(doc.get_update()).decode()}
    if resolver == "counter":
        return "inc", {"by": 1}
    if resolver == "set":
        return "add", {"element": rng.randrange(50)}
    return "set", {"v": i}


def make_events(resolver: str, n: int, keys: int) -> list[bytes]:
    rng = random.Random(1)
    out = []
    for i in range(n):
        dc = DCS[i % 3]
        type_, payload = _payload(resolver, rng, i)
        e = Event(
            new_id(1_700_000_000_000 + i),
            f"k{rng.randrange(keys)}",
            type_,
            dc,
            HLC(1_700_000_000_000 + i // 3, i % 3, dc),
            payload,
        )
        out.append(e.encode()[1])
    return out


def fold(resolver: str, values: list[bytes]) -> tuple[float, float]:
    """(decode+fold events/s, fold-only events/s)."""
    m = Materializer(ResolverRegistry(default=resolver))
    t0 = time.process_time()
    events = [Event.decode(v) for v in values]
    t1 = time.process_time()
    for e in events:
        m.apply(e)
    t2 = time.process_time()
    return len(values) / (t2 - t0), len(values) / (t2 - t1)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--resolvers", default="lww,field-lww,document,multi-value,counter,set")
    args = p.parse_args()
    rows = []
    for r in args.resolvers.split(","):
        n = args.events if r != "document" else min(args.events, 50_000)
        values = make_events(r, n, args.keys)
        total, only = fold(r, values)
        rows.append(
            {
                "resolver": r,
                "events": n,
                "keys": args.keys,
                "decode_and_fold_per_s": round(total),
                "fold_per_s": round(only),
            }
        )
        print(
            f"{r:<12} {n:>8} events  decode+fold {total:>10,.0f}/s  fold {only:>10,.0f}/s",
            flush=True,
        )
    print(orjson.dumps(rows).decode())


if __name__ == "__main__":
    main()
