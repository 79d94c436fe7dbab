"""The run state file: what the last run read, so the next nightly run starts where it stopped.

A small JSON file (``state.json`` in the output folder unless ``--state`` says otherwise):
``until_ms`` of the last window and, per DC/topic/partition, the end offset read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from spark_reconcile.errors import ReconcileError
from spark_reconcile.ranges import PartitionRange

VERSION = 1


@dataclass(frozen=True, slots=True)
class RunState:
    since_ms: int
    until_ms: int
    offsets: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """dc -> topic -> partition (as a string, like Spark's offset JSON) -> end offset read."""

    def end_offset(self, dc: str, topic: str, partition: int) -> int | None:
        return self.offsets.get(dc, {}).get(topic, {}).get(str(partition))

    @classmethod
    def from_ranges(
        cls, since_ms: int, until_ms: int, ranges: Iterable[PartitionRange]
    ) -> RunState:
        offsets: dict[str, dict[str, dict[str, int]]] = {}
        for r in ranges:
            offsets.setdefault(r.dc, {}).setdefault(r.topic, {})[str(r.partition)] = r.end
        return cls(since_ms, until_ms, offsets)

    def to_json(self) -> bytes:
        doc = {
            "version": VERSION,
            "since_ms": self.since_ms,
            "until_ms": self.until_ms,
            "offsets": self.offsets,
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)


def load_state(path: Path) -> RunState | None:
    """The state of the last run, or ``None`` when there was none."""
    if not path.exists():
        return None
    try:
        doc: Any = orjson.loads(path.read_bytes())
        return RunState(int(doc["since_ms"]), int(doc["until_ms"]), dict(doc["offsets"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ReconcileError(
            f"state file {path} is unreadable ({exc}); delete it and pass --since explicitly"
        ) from None


def save_state(path: Path, state: RunState) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half a state file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(state.to_json())
    tmp.replace(path)
