"""Sortable unique event ids: 48 bits of milliseconds then 80 random bits, Crockford base32
(26 characters, ULID layout), so ids sort by creation time and never collide in practice."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id(now_ms: int | None = None) -> str:
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    out = []
    for _ in range(26):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def is_id(text: str) -> bool:
    return len(text) == 26 and all(c in _ALPHABET for c in text)
