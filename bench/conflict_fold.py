"""Fold throughput of conflict's resolvers on one core: events/s for LWW, field-level LWW and
pycrdt documents (plus the other built-ins). CPU time of this process, so the figures hold on a
busy machine.

    python -m bench.conflict_fold [--events 200000] [--keys 1000] [--doc-events 50000]

Columns (events/s):

* ``decode`` — ``Event.decode`` of the JSON envelope alone;
* ``apply`` — ``Materializer.apply`` of every event (validation, dedupe, incremental fold);
* ``apply+read`` — ``apply`` plus reading every key's value once at the end (the state);
* ``callback`` — ``apply`` with an ``on_change`` callback, so the value of the key is computed
  after every event (what a ``PatternConsumer`` with callbacks does);
* ``resolve`` — pure ``resolve(name, events)`` per key over pre-grouped events (the Spark
  reconcile job's path).
"""

from __future__ import annotations

import argparse
import base64
import random
import time
from collections.abc import Callable
from typing import Any

import orjson
import pycrdt

from conflict import HLC, Event, Materializer, ResolverRegistry, resolve
from conflict.ids import new_id

DCS = ("SF", "NYC", "LON")
FIELDS = "abcdef"


class _Editors:
    """One pycrdt replica per DC, each event an incremental update of its replica."""

    def __init__(self, keys: int) -> None:
        self.docs: dict[tuple[int, str], pycrdt.Doc[Any]] = {}

    def edit(self, key: int, dc: str, field: str, value: int) -> dict[str, str]:
        doc = self.docs.get((key, dc))
        if doc is None:
            doc = self.docs[(key, dc)] = pycrdt.Doc(client_id=key * 8 + DCS.index(dc) + 1)
        before = doc.get_state()
        doc.get("root", type=pycrdt.Map)[field] = value
        return {"update": base64.b64encode(doc.get_update(before)).decode()}


def make_events(resolver: str, n: int, keys: int) -> list[Event]:
    rng = random.Random(1)
    editors = _Editors(keys)
    out = []
    for i in range(n):
        dc = DCS[i % 3]
        key = rng.randrange(keys)
        if resolver == "field-lww":
            type_, payload = "patch", {rng.choice(FIELDS): i}
        elif resolver == "document":
            type_, payload = "yjs", editors.edit(key, dc, rng.choice(FIELDS), i)
        elif resolver == "counter":
            type_, payload = "inc", {"by": 1}
        elif resolver == "set":
            type_, payload = "add", {"element": rng.randrange(50)}
        else:
            type_, payload = "set", {"v": i}
        ms = 1_700_000_000_000 + i // 3
        out.append(Event(new_id(ms), f"k{key}", type_, dc, HLC(ms, i % 3, dc), payload, ()))
    return out


def _rate(n: int, fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return n / (time.process_time() - t0)


def measure(resolver: str, events: list[Event]) -> dict[str, Any]:
    n = len(events)
    values = [e.encode()[1] for e in events]
    registry = ResolverRegistry(default=resolver)

    def apply(m: Materializer) -> Materializer:
        for e in events:
            m.apply(e)
        return m

    def apply_read() -> None:
        for _ in apply(Materializer(registry)):
            pass

    def with_callback() -> None:
        m = Materializer(registry)
        m.on_change(lambda key, value: None)
        apply(m)

    by_key: dict[str, list[Event]] = {}
    for e in events:
        by_key.setdefault(e.key, []).append(e)

    def pure() -> None:
        for evs in by_key.values():
            resolve(resolver, evs)

    return {
        "resolver": resolver,
        "events": n,
        "keys": len(by_key),
        "decode": round(_rate(n, lambda: [Event.decode(v) for v in values])),
        "apply": round(_rate(n, lambda: apply(Materializer(registry)))),
        "apply+read": round(_rate(n, apply_read)),
        "callback": round(_rate(n, with_callback)),
        "resolve": round(_rate(n, pure)),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--doc-events", type=int, default=50_000, help="events for document")
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--resolvers", default="lww,field-lww,document,multi-value,counter,set")
    args = p.parse_args()
    rows = []
    cols = ("decode", "apply", "apply+read", "callback", "resolve")
    print(f"{'resolver':<12} {'events':>8} " + " ".join(f"{c:>11}" for c in cols), flush=True)
    for r in args.resolvers.split(","):
        n = args.doc_events if r == "document" else args.events
        row = measure(r, make_events(r, n, args.keys))
        rows.append(row)
        print(f"{r:<12} {n:>8} " + " ".join(f"{row[c]:>11,}" for c in cols), flush=True)
    print(orjson.dumps(rows).decode())


if __name__ == "__main__":
    main()
