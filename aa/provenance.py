"""Provenance headers: the names and their encoding, defined once.

Every record aa forwards carries:

* ``aa-origin`` — the DC where an application first wrote the record. A record without it was
  written locally by an application, so its origin is the DC it is read from.
* ``aa-path``   — the DCs the record has been written in, origin first, comma separated
  (``SF,NYC``). A flow A→B appends B. A record whose path names a DC twice has looped.
* ``aa-src``    — ``dc/topic/partition/offset`` of the record in its origin DC; it identifies the
  record across DCs (offset translation, reconciliation) and is never rewritten once set.
* ``aa-ts``     — milliseconds since the epoch when the last mirror hop produced the copy (the
  record keeps its original CreateTime, so this is what replication delay is measured from).
  Rewritten at every hop; ignored by :func:`read`.

Values are UTF-8. Decoding is strict: anything malformed raises :class:`ProvenanceError`.

Which headers count (:func:`mirrored_into`): provenance is believed only when a mirror wrote the
record into the DC it is read from — all three headers present and well formed, the path
starting at the origin and ending at this DC, ``aa-src`` naming the origin and this record's
topic (or, in prefix mode, the topic without the origin's prefix). Anything else — a record an
application re-produced with copied headers, a partial or garbled set, headers copied from
another DC — was written here by an application: it is local, its stale ``aa-*`` headers are
replaced, and it is forwarded like any local record. So no odd header stops a flow, and nothing
loops: a local record gets fresh provenance and crosses each link once like any other event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aa.errors import ProvenanceError

ORIGIN = "aa-origin"
PATH = "aa-path"
SRC = "aa-src"
MIRRORED_AT = "aa-ts"
BATCH = "aa-batch"
"""On the first record of each record batch the mirror producer writes into DC B:
``B/<producer id>`` (:func:`batch_mark`). It says "every record of this batch is a mirror's
copy" to the flows that read B (:mod:`aa.kafka.fetched`); ignored by :func:`read`, stripped
when forwarded."""
PROVENANCE_HEADERS = frozenset({ORIGIN, PATH, SRC})
MIRROR_HEADERS = PROVENANCE_HEADERS | {MIRRORED_AT, BATCH}
"""Every header the mirror owns: stripped from the application's headers and set anew."""
PREFIX = "aa-"

DC_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
"""A DC name: a letter, then letters, digits, ``_`` or ``-``; at most 32 characters. No ``.``
(the default prefix separator), ``,`` (the path separator) or ``/`` (the src separator)."""

Headers = Sequence[tuple[str, bytes]]
MAX_PATH_BYTES = 4096
"""Longest ``aa-path`` believed (128 hops of the longest DC names); longer is not a mirror's."""
MAX_SRC_BYTES = 512
"""Longest ``aa-src`` believed (a DC name, a 249-character topic and two integers fit)."""
_DIGITS = re.compile(r"[0-9]{1,19}\Z")


def check_dc_name(name: str) -> str:
    """Return ``name`` if it is a valid DC name, else raise ``ValueError`` with the rule."""
    if not DC_NAME.match(name):
        raise ValueError(
            f"invalid DC name {name!r}: use a letter followed by up to 31 letters, digits, "
            "'_' or '-' (for example SF, NYC, eu-west_1)"
        )
    return name


@dataclass(frozen=True, slots=True)
class SourceRef:
    """Where a record was first written: DC, topic, partition, offset."""

    dc: str
    topic: str
    partition: int
    offset: int

    def encode(self) -> bytes:
        return f"{self.dc}/{self.topic}/{self.partition}/{self.offset}".encode()

    @classmethod
    def decode(cls, raw: bytes) -> SourceRef:
        text = _text(SRC, raw)
        parts = text.split("/")
        if len(parts) != 4:
            raise ProvenanceError(f"header {SRC}={text!r}: expected dc/topic/partition/offset")
        dc, topic, partition, offset = parts
        if not DC_NAME.match(dc) or not topic:
            raise ProvenanceError(f"header {SRC}={text!r}: bad DC or empty topic")
        # ASCII digits only: int() would also take "+5", " 5", "1_0" and other scripts' digits,
        # none of which a mirror writes.
        if not (_DIGITS.match(partition) and _DIGITS.match(offset)):
            raise ProvenanceError(
                f"header {SRC}={text!r}: partition and offset must be integers, not negative "
                "(ASCII digits)"
            )
        return cls(dc, topic, int(partition), int(offset))

    def __str__(self) -> str:
        return f"{self.dc}/{self.topic}/{self.partition}/{self.offset}"


@dataclass(frozen=True, slots=True)
class Provenance:
    """The provenance of one record as read from its headers.

    ``origin`` is ``None`` and ``path`` empty for a record an application wrote locally.
    """

    origin: str | None
    path: tuple[str, ...]
    src: SourceRef | None

    @property
    def is_local(self) -> bool:
        return self.origin is None

    @property
    def looped(self) -> bool:
        """True when the path names some DC twice: the record crossed back into a DC it left."""
        return len(set(self.path)) != len(self.path)

    def has_visited(self, dc: str) -> bool:
        return dc == self.origin or dc in self.path

    def forwarded(self, source_dc: str, target_dc: str, src: SourceRef) -> Provenance:
        """The provenance a copy into ``target_dc`` carries.

        A local record gets ``origin=source_dc``, ``path=(source_dc, target_dc)`` and ``src``; a
        record that already had provenance keeps its origin and src and gets ``target_dc`` added.
        """
        if self.origin is None:
            return Provenance(source_dc, (source_dc, target_dc), src)
        path = self.path or (self.origin,)
        return Provenance(self.origin, (*path, target_dc), self.src or src)

    def headers(self) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        if self.origin is not None:
            out.append((ORIGIN, self.origin.encode()))
        if self.path:
            out.append((PATH, ",".join(self.path).encode()))
        if self.src is not None:
            out.append((SRC, self.src.encode()))
        return out


LOCAL = Provenance(None, (), None)


_MAX_BYTES = {ORIGIN: 32, PATH: MAX_PATH_BYTES, SRC: MAX_SRC_BYTES}


def _text(name: str, raw: bytes | None) -> str:
    if raw is None:
        raise ProvenanceError(f"header {name} has no value")
    if len(raw) > _MAX_BYTES.get(name, MAX_PATH_BYTES):
        raise ProvenanceError(f"header {name} is {len(raw)} bytes, more than a mirror writes")
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ProvenanceError(f"header {name} is not UTF-8: {bytes(raw)[:32]!r}") from None


def _dc(name: str, text: str) -> str:
    if not DC_NAME.match(text):
        raise ProvenanceError(f"header {name}={text!r} is not a DC name")
    return text


def read(headers: Iterable[tuple[str, bytes | None]] | None) -> Provenance:
    """Read the provenance of a record from its headers; raise ``ProvenanceError`` if malformed.

    Headers other than ``aa-*`` are ignored. A repeated ``aa-*`` header is malformed.
    """
    origin: str | None = None
    path: tuple[str, ...] = ()
    src: SourceRef | None = None
    seen: set[str] = set()
    for key, value in headers or ():
        if not key.startswith(PREFIX) or key not in PROVENANCE_HEADERS:
            continue
        if key in seen:
            raise ProvenanceError(f"header {key} appears more than once")
        seen.add(key)
        if key == ORIGIN:
            origin = _dc(ORIGIN, _text(ORIGIN, value))
        elif key == PATH:
            text = _text(PATH, value)
            path = tuple(_dc(PATH, part) for part in text.split(","))
        else:
            src = SourceRef.decode(value if value is not None else b"")
    if origin is None and (path or src is not None):
        raise ProvenanceError(f"{PATH} or {SRC} present without {ORIGIN}")
    if origin is not None and path and path[0] != origin:
        raise ProvenanceError(f"{PATH} must start with the origin {origin!r}, got {path!r}")
    return Provenance(origin, path, src)


def mirrored_into(
    headers: Iterable[tuple[str, bytes | None]] | None,
    dc: str,
    topic: str,
    separator: str | None = None,
) -> Provenance | None:
    """The record's provenance if a mirror wrote it into ``dc``'s ``topic``; ``None`` when the
    record is local there (no ``aa-*`` provenance, or provenance no mirror would have written).

    ``separator`` is the prefix separator in prefix mode, ``None`` in headers mode: there the
    copy of ``SF/users/…`` lives in ``SF.users`` (and of ``SF/SF.users/…`` in ``SF.users``).
    The reference for the router's cached fast path.
    """
    try:
        p = read(headers)
    except ProvenanceError:
        return None
    if p.origin is None or p.src is None or len(p.path) < 2 or p.path[-1] != dc:
        return None
    if p.src.dc != p.origin:
        return None
    want = p.src.topic
    if separator is not None and not want.startswith(p.origin + separator):
        want = f"{p.origin}{separator}{want}"  # prefix mode: the copy carries the origin's name
    return p if topic == want else None


def strip(headers: Iterable[tuple[str, bytes]] | None) -> list[tuple[str, bytes]]:
    """The application's own headers: everything but the headers the mirror owns."""
    return [(k, v) for k, v in headers or () if k not in MIRROR_HEADERS]


def with_provenance(
    headers: Iterable[tuple[str, bytes]] | None, provenance: Provenance
) -> list[tuple[str, bytes]]:
    """The application's headers, in order, followed by ``provenance``'s headers."""
    return [*strip(headers), *provenance.headers()]


def has_mirror_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> bool:
    """True when any ``aa-*`` header is present; False is the hot path's common case."""
    return any(k.startswith(PREFIX) for k, _ in headers or ())


def batch_mark(dc: str, producer_id: int) -> tuple[str, bytes]:
    """The ``aa-batch`` header for the first record of a batch the mirror writes into ``dc``."""
    return (BATCH, f"{dc}/{producer_id}".encode())


def batch_marked_by(value: bytes | None, dc: str, producer_id: int | None) -> bool:
    """Whether an ``aa-batch`` value read in ``dc`` names the batch's own producer there.

    The broker gives each producer of a cluster its own id, so a mark copied by an application
    (re-producing a record with its headers) never matches the id of the batch that holds it.
    """
    if value is None or producer_id is None or producer_id < 0:
        return False
    return value == f"{dc}/{producer_id}".encode()


class LocalStamp:
    """Provenance headers for *local* records of one source partition copied A→B, precomputed.

    Equivalent to ``with_provenance(h, LOCAL.forwarded(A, B, SourceRef(A, t, p, offset)))`` for
    records without ``aa-*`` headers, at a fraction of the cost: the origin and path headers are
    built once, the src header is a prefix plus the offset.
    """

    __slots__ = ("_origin", "_path", "_src_prefix")

    def __init__(self, source: str, target: str, topic: str, partition: int) -> None:
        self._origin = (ORIGIN, source.encode())
        self._path = (PATH, f"{source},{target}".encode())
        self._src_prefix = f"{source}/{topic}/{partition}/".encode()

    def headers(self, offset: int, app_headers: Headers | None) -> list[tuple[str, bytes]]:
        # The hot path of every forwarded local record: one list, one tuple, two bytes.
        src = (SRC, self._src_prefix + b"%d" % offset)
        if not app_headers:
            return [self._origin, self._path, src]
        return [*app_headers, self._origin, self._path, src]

    def parts(self) -> tuple[tuple[str, bytes], tuple[str, bytes], bytes]:
        """The origin and path headers and the ``aa-src`` prefix (before the offset digits),
        for the batch re-encoder (:mod:`aa.mirror.restamp`)."""
        return self._origin, self._path, self._src_prefix
