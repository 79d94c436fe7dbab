"""Confluent's wire format, and the per-record swap of a source schema id for a target one.

A registry-framed key or value starts with the magic byte 0 and the schema id as a 4-byte
big-endian integer; the Avro, Protobuf (message indexes, then the message) or JSON bytes
follow. Translating a record replaces those 4 bytes and leaves every other byte as it was. Pure
and synchronous: the ids were made known before the batch was routed
(:meth:`aa.schemas.translator.SchemaTranslator.resolve`); the swap is a dict lookup.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from aa.protocols import SchemaRefusal, Translate

MAGIC = 0
HEADER = 5
"""The magic byte and the 4-byte id."""


def schema_id(data: bytes | None) -> int | None:
    """The schema id of a framed key or value; ``None`` when it is not framed (null, shorter
    than the header, or another first byte)."""
    if data is None or len(data) < HEADER or data[0] != MAGIC:
        return None
    return int.from_bytes(data[1:HEADER], "big")


def header(schema: int) -> bytes:
    """The first 5 bytes of a record framed with ``schema``."""
    return bytes((MAGIC,)) + schema.to_bytes(4, "big")


@dataclass(slots=True)
class IdTable:
    """Per source header (magic byte and id), the target's header, or why a record with that
    id is refused. Shared by the topics of one flow; bounded by the translator."""

    headers: dict[bytes, bytes | SchemaRefusal] = field(default_factory=dict)

    def missing(self, values: Iterable[bytes | None]) -> set[int]:
        """The ids framed in ``values`` that the table does not know yet."""
        out: set[int] = set()
        known = self.headers
        for data in values:
            if data is None or len(data) < HEADER or data[0] != MAGIC:
                continue
            if data[:HEADER] not in known:
                out.add(int.from_bytes(data[1:HEADER], "big"))
        return out


def topic_translation(table: IdTable, *, keys: bool, values: bool) -> Translate:
    """How the records of one topic are translated: ``key`` and ``value`` with their source ids
    replaced, or the refusal of the first id that has one. A closure over the table's dict,
    specialized for values only (the usual case): 1.1 µs per 512-byte value where a method
    reading the same from its object took 1.7 (one measurement, on a loaded machine)."""
    headers = table.headers

    def one(data: bytes | None) -> bytes | SchemaRefusal | None:
        if data is None or len(data) < HEADER or data[0] != MAGIC:
            return data
        swap = headers[data[:HEADER]]
        return swap if isinstance(swap, SchemaRefusal) else swap + data[HEADER:]

    def values_only(
        key: bytes | None, value: bytes | None
    ) -> tuple[bytes | None, bytes | None] | SchemaRefusal:
        if value is None or len(value) < HEADER or value[0] != MAGIC:
            return key, value
        swap = headers[value[:HEADER]]
        return swap if isinstance(swap, SchemaRefusal) else (key, swap + value[HEADER:])

    def with_keys(
        key: bytes | None, value: bytes | None
    ) -> tuple[bytes | None, bytes | None] | SchemaRefusal:
        k = one(key)
        if isinstance(k, SchemaRefusal):
            return k
        v = one(value) if values else value
        return v if isinstance(v, SchemaRefusal) else (k, v)

    return with_keys if keys else values_only
