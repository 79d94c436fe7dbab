"""Folding the suspect keys' events, per (logical topic, key, DC), into state hashes.

The fold is Python (conflict's resolvers). Spark runs Python only in Python workers, and the
first one a run starts took ~2.5 s before folding anything (3 x 1M bench, issue 14's twelfth
change), while a run has few suspect keys as a rule (the bench: one key in 10,000). So when
the suspect keys' events are at most :data:`DRIVER_FOLD_MAX_EVENTS`, the driver collects them,
folds them and decides divergent's rows itself (:func:`divergent_on_driver`), and hands Spark
the rows as one literal parsed in the JVM (no Python worker, and a plan of one constant
however many rows); with more, Spark folds them in Python workers (:func:`key_states`). Both
call :func:`fold`; the unit tests check that both give the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from pyspark.sql import functions as F

from spark_reconcile.events import state_hash

ERROR_PREFIX = "!error: "
CONFLICTING, ABSENT, UNFOLDABLE = "conflicting copies", "absent events", "unfoldable"
DRIVER_FOLD_MAX_EVENTS = 20_000
"""Suspect events (with their values) the driver folds itself; above it, Python workers do."""
DRIVER_FOLD_MAX_BYTES = 64 << 20
"""And their values' bytes at most: a few large values must not fill the driver's memory."""
DIVERGENT_ROWS = (
    "array<struct<ltopic:string,key:string,hashes:map<string,string>,"
    "absent_in:array<string>,reason:string>>"
)

Event = tuple[Any, Sequence[Any] | None]
"""An event as the fold reads it: ``(value, headers)``, headers ``(key, value)`` pairs."""


def fold(resolver: str, events: Iterable[Event]) -> str:
    """The state hash of one key's events in one DC, or ``ERROR_PREFIX`` and why the resolver
    refused them (reported as the key's state: one bad key never fails the job)."""
    records = [(_bytes(e[0]), [(h[0], _bytes(h[1])) for h in e[1] or ()]) for e in events]
    try:
        return state_hash(resolver, records)
    except Exception as exc:  # noqa: BLE001 - reported as the key's state: one bad key never fails the job
        return f"{ERROR_PREFIX}{exc}"[:300]


def _bytes(value: Any) -> bytes | None:
    """Spark hands binary values over as ``bytearray`` or ``bytes``: the fold sees bytes."""
    return None if value is None else bytes(value)


def key_states(evs_with_values: Any) -> Any:
    """Per (logical topic, key, DC) of events carrying ``value`` and ``headers``: number of
    events and the folded state hash, in Spark's Python workers."""
    grouped = evs_with_values.groupBy("ltopic", "resolver", "key", "dc").agg(
        F.count(F.lit(1)).alias("events"),
        F.collect_list(F.struct("value", "headers")).alias("evs"),
    )
    state = F.udf(fold, "string", useArrow=False)("resolver", "evs")
    return grouped.select("ltopic", "key", "dc", "events", state.alias("state_hash"))


def divergent_on_driver(
    suspect_events: Any,
    topic_dcs: Mapping[str, Sequence[str]],
    max_events: int,
    max_bytes: int | None = None,
) -> Any:
    """Divergent's rows (``ltopic, key, hashes, absent_in, reason``) from the suspect keys'
    events with their values, decided by the driver as Spark's plan in
    :func:`~.divergent.divergent` decides them, when there are at most ``max_events`` events
    whose values hold at most ``max_bytes`` (:data:`DRIVER_FOLD_MAX_BYTES`; one query counts
    them, one collects them); ``None`` when there are more."""
    picked = suspect_events.select(
        "ltopic", "resolver", "key", "dc", "event_id", "vhash", "value", "headers"
    )
    size = F.coalesce(F.sum(F.length("value")), F.lit(0))
    events, value_bytes = picked.agg(F.count(F.lit(1)), size).first()
    limit = DRIVER_FOLD_MAX_BYTES if max_bytes is None else max_bytes
    if events > max_events or value_bytes > limit:
        return None
    rows = picked.collect()
    per_dc: dict[tuple[str, str, str, str], list[Event]] = {}
    held: dict[tuple[str, str], set[str]] = {}
    values: dict[tuple[str, str, str], set[Any]] = {}
    for r in rows:
        per_dc.setdefault((r.ltopic, r.resolver, r.key, r.dc), []).append((r.value, r.headers))
        held.setdefault((r.ltopic, r.key), set()).add(r.dc)
        vhashes = values.setdefault((r.ltopic, r.key, r.event_id), set())
        if r.vhash is not None:
            vhashes.add(r.vhash)
    hashes: dict[tuple[str, str], dict[str, str]] = {}
    for (ltopic, resolver, key, dc), evs in per_dc.items():
        hashes.setdefault((ltopic, key), {})[dc] = fold(resolver, evs)
    # one event id with different values in different DCs: a forged or corrupted copy
    conflicting = {(t, k) for (t, k, _), vs in values.items() if len(vs) > 1}
    out = []
    for (ltopic, key), states in sorted(hashes.items()):
        wanted = dict.fromkeys(sorted(topic_dcs.get(ltopic, ())))
        absent_in = [d for d in wanted if d not in held[(ltopic, key)]]
        error = any(s.startswith(ERROR_PREFIX) for s in states.values())
        if len(set(states.values())) > 1 or absent_in or error:
            reason = (
                CONFLICTING if (ltopic, key) in conflicting else UNFOLDABLE if error else ABSENT
            )
            out.append(
                {"ltopic": ltopic, "key": key, "hashes": states, "absent_in": absent_in}
                | {"reason": reason}
            )
    # FAILFAST: a literal Spark could not parse must fail the run, never read as no rows
    literal = F.from_json(F.lit(orjson.dumps(out).decode()), DIVERGENT_ROWS, {"mode": "FAILFAST"})
    return suspect_events.sparkSession.range(1).select(F.inline(literal))
