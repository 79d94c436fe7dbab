"""CRDT resolvers: PN counter, add-wins OR-set, and pycrdt (Yjs) documents."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson
import pycrdt

from conflict.envelope import Event
from conflict.errors import ResolverError
from conflict.resolvers.observed import Observed


@dataclass(slots=True)
class Counts:
    """PN counter state: each event's signed amount by id (so a merge never counts twice)."""

    amounts: dict[str, int] = field(default_factory=dict)
    total: int = 0


class CounterResolver:
    """A PN counter: the sum of ``inc``/``dec`` amounts (payload ``{"by": n}``, n >= 0,
    default 1), each event counted once by id."""

    name = "counter"

    def validate(self, event: Event) -> None:
        if event.type not in ("inc", "dec"):
            raise ResolverError(f"event {event.id}: counter accepts inc or dec, not {event.type!r}")
        by = event.payload.get("by", 1) if isinstance(event.payload, dict) else None
        if not isinstance(by, int) or isinstance(by, bool) or by < 0:
            raise ResolverError(f"event {event.id}: counter payload must be {{'by': n >= 0}}")

    def empty(self) -> Counts:
        return Counts()

    def add(self, state: Counts, event: Event) -> Counts:
        if event.id not in state.amounts:
            by: int = event.payload.get("by", 1)
            amount = by if event.type == "inc" else -by
            state.amounts[event.id] = amount
            state.total += amount
        return state

    def merge(self, a: Counts, b: Counts) -> Counts:
        amounts = a.amounts | b.amounts
        return Counts(amounts, sum(amounts.values()))

    def value(self, state: Counts) -> Any:
        return state.total


Elements = Observed[bytes]
"""OR-set state: live adds (id -> canonical element bytes) and every removed add id."""


class SetResolver:
    """An add-wins observed-remove set: a ``remove`` removes only the adds it lists in
    ``supersedes`` (the ones its writer had seen), so a concurrent ``add`` survives.
    Value: the distinct elements, sorted by their canonical JSON."""

    name = "set"

    def validate(self, event: Event) -> None:
        if event.type not in ("add", "remove"):
            raise ResolverError(f"event {event.id}: set accepts add or remove, not {event.type!r}")
        if not isinstance(event.payload, dict) or "element" not in event.payload:
            raise ResolverError(f"event {event.id}: set payload must be {{'element': x}}")

    def empty(self) -> Elements:
        return Elements()

    def add(self, state: Elements, event: Event) -> Elements:
        if event.type == "remove":
            state.supersede(event.supersedes)
        else:
            state.put(event.id, orjson.dumps(event.payload["element"], option=orjson.OPT_SORT_KEYS))
        return state

    def merge(self, a: Elements, b: Elements) -> Elements:
        return a.merged(b)

    def value(self, state: Elements) -> Any:
        return [orjson.loads(x) for x in sorted(set(state.live.values()))]


def yjs_update(event: Event) -> bytes:
    """The Yjs update an event carries (payload ``{"update": base64}``)."""
    payload = event.payload
    raw = payload.get("update") if isinstance(payload, dict) else None
    if not isinstance(raw, str):
        raise ResolverError(f"event {event.id}: document payload must be {{'update': base64}}")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ResolverError(f"event {event.id}: document update is not base64") from None


def encode_update(update: bytes) -> dict[str, str]:
    """The payload of an event carrying ``update`` (from ``doc.get_update(...)``)."""
    return {"update": base64.b64encode(update).decode("ascii")}


@dataclass(slots=True)
class Document:
    """Document state: every update by event id; the document is built from them when read.

    Why not apply each update to one live document: pycrdt 0.14 (yrs) loses content when two
    updates wait for a dependency that arrives after them (seen: updates 2 and 3 of one writer
    applied before its update 1 leave only update 1). ``merge_updates`` of all updates does not
    depend on their order, so the value is always built from it; ``doc`` caches that build until
    the next new update.
    """

    updates: dict[str, bytes] = field(default_factory=dict)
    doc: pycrdt.Doc[Any] | None = None


class DocumentResolver:
    """pycrdt documents: each ``yjs`` event carries a Yjs update (payload ``{"update":
    base64}``, see :func:`encode_update`); the value is the merged document's ``root`` map as
    plain data."""

    name = "document"

    def validate(self, event: Event) -> None:
        if event.type != "yjs":
            raise ResolverError(f"event {event.id}: document accepts yjs, not {event.type!r}")
        try:
            pycrdt.Doc().apply_update(yjs_update(event))
        except ValueError as exc:
            raise ResolverError(f"event {event.id}: not a valid Yjs update: {exc}") from None

    def empty(self) -> Document:
        return Document()

    def add(self, state: Document, event: Event) -> Document:
        if event.id not in state.updates:
            state.updates[event.id] = yjs_update(event)
            state.doc = None
        return state

    def merge(self, a: Document, b: Document) -> Document:
        return Document(a.updates | b.updates)

    def value(self, state: Document) -> Any:
        if state.doc is None:  # a cache, not part of the state: filling it changes no value
            doc: pycrdt.Doc[Any] = pycrdt.Doc()
            if state.updates:
                doc.apply_update(pycrdt.merge_updates(*state.updates.values()))
            state.doc = doc
        return state.doc.get("root", type=pycrdt.Map).to_py()
