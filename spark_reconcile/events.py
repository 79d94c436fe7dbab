"""The one place spark_reconcile touches ``conflict/``: decode an event's identity and fold a
key's events into canonical state bytes.

Runs inside Spark's Python workers, so everything here is plain functions of bytes.

While ``conflict`` does not yet export ``Event``/``resolve`` this module uses an interim
envelope of the same shape (orjson ``{"id", "key", "hlc": [ms, counter, dc], "payload"}``,
last-writer-wins by HLC then DC then id); once they land, :func:`_conflict_api` picks them up
and nothing else in the job changes.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from spark_reconcile.errors import EventDecodeError

Headers = Sequence[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True)
class EventIdentity:
    id: str
    key: str


def _conflict_api() -> tuple[Any, Any] | None:
    """``(Event, resolve)`` from ``conflict`` when it provides them, else ``None``."""
    try:
        mod = importlib.import_module("conflict")
    except ImportError:
        return None
    event, resolve = getattr(mod, "Event", None), getattr(mod, "resolve", None)
    if event is None or resolve is None:
        return None
    return event, resolve


def identity(value: bytes | None, headers: Headers | None) -> EventIdentity:
    """The event id and key of a record; :class:`EventDecodeError` when it is no event."""
    api = _conflict_api()
    if api is not None:
        try:
            ev = api[0].decode(value, list(headers or ()))
        except Exception as exc:  # conflict's decode errors: reported as findings, never raised
            raise EventDecodeError(str(exc)) from exc
        return EventIdentity(str(ev.id), _key_text(ev.key))
    doc = _interim_decode(value)
    return EventIdentity(doc["id"], doc["key"])


def state_bytes(resolver: str, records: Iterable[tuple[bytes | None, Headers | None]]) -> bytes:
    """Canonical state of one key after folding its events (duplicates and order ignored)."""
    api = _conflict_api()
    if api is not None:
        events = [api[0].decode(v, list(h or ())) for v, h in records]
        out = api[1](resolver, events)
        return out if isinstance(out, bytes) else bytes(out)
    return _interim_lww(resolver, [_interim_decode(v) for v, _ in records])


def state_hash(resolver: str, records: Iterable[tuple[bytes | None, Headers | None]]) -> str:
    """First 16 bytes of SHA-256 of :func:`state_bytes`, hex: what DCs compare."""
    return hashlib.sha256(state_bytes(resolver, records)).hexdigest()[:32]


def _key_text(key: Any) -> str:
    return key.decode("utf-8", "backslashreplace") if isinstance(key, bytes) else str(key)


def _interim_decode(value: bytes | None) -> dict[str, Any]:
    if value is None:
        raise EventDecodeError("event record has no value (tombstone)")
    try:
        doc = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise EventDecodeError(f"event value is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise EventDecodeError("event value must be a JSON object")
    for name, kind in (("id", str), ("key", str), ("hlc", list)):
        if not isinstance(doc.get(name), kind):
            raise EventDecodeError(f"event field {name!r} missing or not a {kind.__name__}")
    hlc = doc["hlc"]
    if len(hlc) != 3 or not isinstance(hlc[0], int) or not isinstance(hlc[1], int):
        raise EventDecodeError("event field 'hlc' must be [physical_ms, counter, dc]")
    return doc


def _interim_lww(resolver: str, events: list[dict[str, Any]]) -> bytes:
    if resolver != "lww":
        raise EventDecodeError(f"resolver {resolver!r} needs conflict/ (interim: lww only)")
    if not events:
        return b"null"
    winner = max(events, key=lambda e: (e["hlc"][0], e["hlc"][1], str(e["hlc"][2]), e["id"]))
    return orjson.dumps(winner.get("payload"), option=orjson.OPT_SORT_KEYS)


def interim_event(event_id: str, key: str, hlc: tuple[int, int, str], payload: Any) -> bytes:
    """An interim envelope (tests and the benchmark build data with it until conflict lands)."""
    return orjson.dumps({"id": event_id, "key": key, "hlc": list(hlc), "payload": payload})
