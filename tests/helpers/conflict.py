"""Events for the resolvers' tests: numbered events, Yjs updates, document writers."""

from __future__ import annotations

import base64
from typing import Any

import pycrdt

from conflict import HLC, Event, encode_update
from conflict.ids import new_id


def ev(
    i: int,
    dc: str,
    ms: int,
    logical: int,
    type_: str,
    payload: Any,
    supersedes: tuple[str, ...] = (),
) -> Event:
    return Event(
        f"{new_id(ms)[:10]}{i:016d}", "k", type_, dc, HLC(ms, logical, dc), payload, supersedes
    )


def yjs(field: str, value: int, client: int) -> str:
    doc: pycrdt.Doc[Any] = pycrdt.Doc(client_id=client)
    doc.get("root", type=pycrdt.Map)[field] = value
    return base64.b64encode(doc.get_update()).decode()


class Writers:
    """Three document replicas that edit and emit *incremental* updates: each update depends on
    the writer's earlier ones, so a fold sees updates that must wait for their dependencies."""

    def __init__(self) -> None:
        self.docs: list[pycrdt.Doc[Any]] = [pycrdt.Doc(client_id=100 + n) for n in range(3)]

    def edit(self, writer: int, field: str, value: int) -> dict[str, str]:
        doc = self.docs[writer]
        before = doc.get_state()
        doc.get("root", type=pycrdt.Map)[field] = value
        return encode_update(doc.get_update(before))
