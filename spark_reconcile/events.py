"""The one place spark_reconcile touches ``conflict/``: decode an event's identity and fold a
key's events into canonical state bytes with conflict's resolvers.

Runs inside Spark's Python workers, so everything here is plain functions of bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from conflict import BUILTIN, ConflictError, Event, resolve
from conflict import state_bytes as canonical_bytes
from spark_reconcile.errors import EventDecodeError

Headers = Sequence[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True)
class EventIdentity:
    id: str
    key: str


def _decode(value: bytes | None, headers: Headers | None) -> Event:
    try:
        return Event.decode(value, list(headers or ()))
    except ConflictError as exc:  # reported as a finding, never raised out of the job
        raise EventDecodeError(str(exc)) from exc


def known_resolvers() -> tuple[str, ...]:
    """Names ``--events PATTERN=RESOLVER`` accepts (conflict's built-in resolvers)."""
    return tuple(sorted(BUILTIN))


def identity(value: bytes | None, headers: Headers | None) -> EventIdentity:
    """The event id and key of a record; :class:`EventDecodeError` when it is no event."""
    ev = _decode(value, headers)
    return EventIdentity(ev.id, ev.key)


def state_bytes(resolver: str, records: Iterable[tuple[bytes | None, Headers | None]]) -> bytes:
    """Canonical state of one key after folding its events (duplicates and order ignored)."""
    try:
        chosen = BUILTIN[resolver]
    except KeyError:
        raise EventDecodeError(
            f"unknown resolver {resolver!r}; known: {', '.join(sorted(BUILTIN))}"
        ) from None
    return canonical_bytes(resolve(chosen, [_decode(v, h) for v, h in records]))


def state_hash(resolver: str, records: Iterable[tuple[bytes | None, Headers | None]]) -> str:
    """First 16 bytes of SHA-256 of :func:`state_bytes`, hex: what DCs compare."""
    return hashlib.sha256(state_bytes(resolver, records)).hexdigest()[:32]
