"""CRDT resolvers: PN counter, add-wins OR-set, and pycrdt (Yjs) documents."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import orjson
import pycrdt

from conflict.envelope import Event
from conflict.errors import ResolverError


class CounterResolver:
    """A PN counter: the sum of ``inc``/``dec`` amounts (each event counted once, by id)."""

    name = "counter"

    def validate(self, event: Event) -> None:
        if event.type not in ("inc", "dec"):
            raise ResolverError(f"event {event.id}: counter accepts inc or dec, not {event.type!r}")
        by = event.payload.get("by", 1) if isinstance(event.payload, dict) else None
        if not isinstance(by, int) or isinstance(by, bool) or by < 0:
            raise ResolverError(f"event {event.id}: counter payload must be {{'by': n >= 0}}")

    def value(self, events: Sequence[Event]) -> Any:
        total = 0
        for e in events:
            by = e.payload.get("by", 1)
            total += by if e.type == "inc" else -by
        return total


class SetResolver:
    """An add-wins observed-remove set: a ``remove`` removes only the adds it lists in
    ``supersedes`` (the ones its writer had seen), so a concurrent ``add`` survives."""

    name = "set"

    def validate(self, event: Event) -> None:
        if event.type not in ("add", "remove"):
            raise ResolverError(f"event {event.id}: set accepts add or remove, not {event.type!r}")
        if not isinstance(event.payload, dict) or "element" not in event.payload:
            raise ResolverError(f"event {event.id}: set payload must be {{'element': x}}")

    def value(self, events: Sequence[Event]) -> Any:
        removed = {s for e in events if e.type == "remove" for s in e.supersedes}
        live = {
            orjson.dumps(e.payload["element"], option=orjson.OPT_SORT_KEYS)
            for e in events
            if e.type == "add" and e.id not in removed
        }
        return [orjson.loads(x) for x in sorted(live)]


def yjs_update(event: Event) -> bytes:
    payload = event.payload
    raw = payload.get("update") if isinstance(payload, dict) else None
    if not isinstance(raw, str):
        raise ResolverError(f"event {event.id}: document payload must be {{'update': base64}}")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ResolverError(f"event {event.id}: document update is not base64") from None


class DocumentResolver:
    """pycrdt documents: each event carries a Yjs update; the state is the merged document's
    ``root`` map (Yjs updates commute and are idempotent, so any order gives the same doc)."""

    name = "document"

    def validate(self, event: Event) -> None:
        if event.type != "yjs":
            raise ResolverError(f"event {event.id}: document accepts yjs, not {event.type!r}")
        try:
            pycrdt.Doc().apply_update(yjs_update(event))
        except ValueError as exc:
            raise ResolverError(f"event {event.id}: not a valid Yjs update: {exc}") from None

    def value(self, events: Sequence[Event]) -> Any:
        doc: pycrdt.Doc[Any] = pycrdt.Doc()
        for e in events:
            doc.apply_update(yjs_update(e))
        root = doc.get("root", type=pycrdt.Map)
        return root.to_py()
