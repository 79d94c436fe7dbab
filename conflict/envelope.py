"""The event envelope: what every event-sourced record carries, encoded once.

The record value is JSON (orjson)::

    {"id": "01J...", "key": "alice", "type": "set", "origin": "SF",
     "hlc": "1700000000000:0:SF", "supersedes": ["01H..."], "payload": {...}}

The fields needed for routing without parsing the value also ride in headers: ``event-id``,
``event-type``, ``event-origin``, ``event-hlc`` (deliberately not ``aa-*``: those belong to the
mirror, and a record without them takes the mirror's fast path). The record key is the event
key. :meth:`Event.decode` is strict: anything malformed raises :class:`DecodeError` naming the
field; the caller chooses to raise or dead-letter, never to drop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from aa.provenance import DC_NAME
from conflict.errors import DecodeError
from conflict.hlc import HLC
from conflict.ids import is_id

ID, TYPE, ORIGIN, HLC_HEADER = "event-id", "event-type", "event-origin", "event-hlc"
ENVELOPE_HEADERS = (ID, TYPE, ORIGIN, HLC_HEADER)

_FIELDS = frozenset({"id", "key", "type", "origin", "hlc", "supersedes", "payload"})

Order = tuple[HLC, str]
"""The total order of events: HLC (physical, logical, DC), then id."""


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    key: str
    type: str
    origin: str
    hlc: HLC
    payload: Any = None
    supersedes: tuple[str, ...] = field(default=())

    @property
    def order(self) -> Order:
        """Total order used by every resolver: HLC (physical, logical, DC), then id."""
        return (self.hlc, self.id)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "key": self.key,
            "type": self.type,
            "origin": self.origin,
            "hlc": self.hlc.encode(),
            "payload": self.payload,
        }
        if self.supersedes:
            out["supersedes"] = list(self.supersedes)
        return out

    def encode(self) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
        """``(key, value, headers)`` of the record carrying this event."""
        headers = [
            (ID, self.id.encode()),
            (TYPE, self.type.encode()),
            (ORIGIN, self.origin.encode()),
            (HLC_HEADER, self.hlc.encode().encode()),
        ]
        return self.key.encode(), orjson.dumps(self.to_json()), headers

    @classmethod
    def decode(
        cls, value: bytes | None, headers: Iterable[tuple[str, bytes | None]] | None = None
    ) -> Event:
        """Parse and validate; headers, when given, must agree with the value."""
        if value is None:
            raise DecodeError("value", "record has no value (a tombstone is not an event)")
        try:
            doc = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise DecodeError("value", f"not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise DecodeError("value", f"expected a JSON object, got {type(doc).__name__}")
        unknown = sorted(set(doc) - _FIELDS)
        if unknown:  # a typo such as "supercedes" must not silently lose its meaning
            raise DecodeError(unknown[0], f"unknown field; an event has {sorted(_FIELDS)}")
        origin = _text(doc, "origin")
        if not DC_NAME.match(origin):
            raise DecodeError("origin", f"{origin!r} is not a DC name")
        event = cls(
            id=_text(doc, "id"),
            key=_text(doc, "key"),
            type=_text(doc, "type"),
            origin=origin,
            hlc=HLC.decode(_text(doc, "hlc")),
            payload=doc.get("payload"),
            supersedes=_ids(doc.get("supersedes", [])),
        )
        if not is_id(event.id):
            raise DecodeError("id", f"{event.id!r} is not a 26-character sortable id")
        if event.hlc.dc != event.origin:
            raise DecodeError(
                "hlc", f"HLC DC {event.hlc.dc!r} differs from origin {event.origin!r}"
            )
        for name, raw in headers or ():
            if name in ENVELOPE_HEADERS:
                want = {
                    ID: event.id,
                    TYPE: event.type,
                    ORIGIN: event.origin,
                    HLC_HEADER: event.hlc.encode(),
                }[name]
                if raw is None or raw.decode("utf-8", "replace") != want:
                    raise DecodeError(f"headers.{name}", f"header {raw!r} disagrees with {want!r}")
        return event


def _text(doc: dict[str, Any], name: str) -> str:
    if name not in doc:
        raise DecodeError(name, "missing")
    value = doc[name]
    if not isinstance(value, str) or not value:
        raise DecodeError(name, f"must be a non-empty string, got {value!r}")
    return value


def _ids(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) and is_id(x) for x in raw):
        raise DecodeError("supersedes", f"must be a list of event ids, got {raw!r}")
    return tuple(raw)
