"""kcat (librdkafka's command-line client) as a real peer that writes bytes other clients
cannot: header names that are not UTF-8 (librdkafka passes them as the bytes it is given).

`make sysdeps` installs it (scripts/system-packages.txt); without it the tests that need it
skip, naming the package."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from dataclasses import dataclass

import pytest

KCAT = shutil.which("kcat")


def need_kcat() -> str:
    """The kcat binary, or a skip naming the Debian package (`make sysdeps` installs it)."""
    if KCAT is None:
        pytest.skip("kcat (Debian package kcat) is not installed: run `make sysdeps`")
    return KCAT


@dataclass(frozen=True, slots=True)
class KRecord:
    """A record as kcat reads it: header names and values as bytes."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...]


async def _run(*args: str | bytes, stdin: bytes = b"", timeout: float = 60.0) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        need_kcat(), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    if proc.returncode != 0:
        raise AssertionError(f"kcat {args!r} exited {proc.returncode}: {err.decode()}")
    return out


async def kcat_produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    *,
    key: bytes,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    partition: int = 0,
    compression: str = "none",
) -> None:
    """Write ``values`` (newline-free) with one ``key`` and the same ``headers`` on each, in
    one librdkafka producer (one batch, as it lingers), ``compression`` its codec."""
    args: list[str | bytes] = ["-b", bootstrap, "-t", topic, "-P", "-p", str(partition)]
    args += ["-z", compression, "-k", key]
    for name, value in headers:
        # kcat writes a header name's bytes as given (the first "=" ends it)
        args += ["-H", name + b"=" + value]
    await _run(*args, stdin=b"\n".join(values) + b"\n")


async def kcat_consume(
    bootstrap: str, topic: str, count: int, timeout: float = 60.0
) -> list[KRecord]:
    """Every record of ``topic`` (all partitions) once at least ``count`` are there, header
    names as the bytes on the wire (kcat writes them into its JSON unescaped)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            out = await _run(
                "-b", bootstrap, "-t", topic, "-C", "-e", "-q", "-J", "-o", "beginning"
            )
        except AssertionError as exc:
            if "Unknown topic" not in str(exc) or time.monotonic() > deadline:
                raise
            out = b""  # not created yet
        got = [_record(line) for line in out.splitlines() if line.strip()]
        if len(got) >= count or time.monotonic() > deadline:
            return sorted(got, key=lambda r: r.offset)
        await asyncio.sleep(0.5)


def _record(line: bytes) -> KRecord:
    # latin-1 maps each byte to one character and back: raw bytes survive json.loads
    doc = json.loads(line.decode("latin-1"))
    raw = [None if h is None else h.encode("latin-1") for h in doc.get("headers") or []]
    key, value = doc.get("key"), doc.get("payload")
    return KRecord(
        doc["offset"],
        None if key is None else key.encode("latin-1"),
        None if value is None else value.encode("latin-1"),
        tuple((raw[i], raw[i + 1]) for i in range(0, len(raw), 2)),  # type: ignore[misc]
    )
