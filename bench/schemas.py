"""``--framed``: W1 with every value framed for a schema registry, and aa translating the ids.

A registry per DC (Apicurio Registry, as the tests use: ``aa dev fetch --registry``), one
schema registered in SF (and a few in NYC only, so its id differs there), and a payload file
for the perf tool's preload: values that start with the magic byte 0 and SF's id, the rest
ASCII (``--payload-file`` reads text lines; aa reads only the first 5 bytes of a value). aa's
flow gets a ``schemas`` section naming both registries; every value's id is translated.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aa.dev import cluster as devcluster
from aa.dev.registry import start_registry
from aa.schemas.wire import HEADER, header

LINES = 16
"""Distinct payloads the perf tool picks from."""


def _register(url: str, subject: str, schema: dict[str, Any]) -> int:
    body = json.dumps({"schema": json.dumps(schema)}).encode()
    request = urllib.request.Request(
        f"{url}/subjects/{subject}/versions",
        data=body,
        method="POST",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(json.loads(response.read())["id"])


def _record(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "body", "type": "string"}]}


@contextlib.contextmanager
def framed(work: Path, record_size: int) -> Iterator[tuple[dict[str, Any], Path]]:
    """(the flow's ``schemas`` section, the preload's payload file), registries running."""
    started = []
    try:
        urls = {}
        for dc, port in zip(("SF", "NYC"), devcluster.free_ports(2), strict=True):
            started.append(start_registry(port, work / "registries" / dc))
            urls[dc] = started[-1].url
        for i in range(3):
            _register(urls["NYC"], f"nyc-only-{i}", _record(f"Filler{i}"))
        schema = _register(urls["SF"], "bench-value", _record("Bench"))
        first = header(schema)
        if any(b >= 0x80 or b == 0x0A for b in first):
            raise RuntimeError(f"schema id {schema} is not a plain text line's bytes")
        payloads = work / "framed-payloads.txt"
        body = record_size - HEADER
        lines = [first.decode() + (chr(ord("a") + i) * body) for i in range(LINES)]
        payloads.write_text("\n".join(lines))
        section = {"source": {"url": urls["SF"]}, "target": {"url": urls["NYC"]}}
        yield section, payloads
    finally:
        for r in started:
            r.stop()
