"""Java ``.properties`` syntax, as MirrorMaker 2 reads its dedicated-mode file."""

from __future__ import annotations

import re

from aa.errors import ConfigError


def parse_properties(text: str, file: str = "<string>") -> dict[str, str]:
    """Java ``.properties`` syntax: ``#``/``!`` comments, ``=``/``:``/space separators,
    backslash line continuations and escapes. Later keys win, as in Java; a malformed
    ``\\uXXXX`` escape is an error, as in Java."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key, value = _split(line)
        try:
            out[_unescape(key)] = _unescape(value)
        except ValueError:
            raise ConfigError(
                f"{file}: line {i}: malformed \\uXXXX escape in {line[:80]!r}; write four hex "
                "digits after \\u, or \\\\ for a backslash"
            ) from None
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t":
            key, rest = line[:j], line[j:].lstrip(" \t")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t")
            return key, rest
        j += 1
    return line, ""


def _unescape(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        s = m.group(1)
        if s.startswith("u"):
            return chr(int(s[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(s, s)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", sub, text)
