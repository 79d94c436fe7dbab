"""What travels from the route stage to the commit stage: one fetched batch's sends."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from aa.mirror.errors import FlowError

Batch = dict[TopicPartition, list[Any]]
"""A fetched batch: per source partition, its records in offset order."""


@dataclass(slots=True)
class Pending:
    """One fetched batch on its way to the target."""

    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    """Per source partition, the offset to commit once every send is settled."""
    sends: list[tuple[asyncio.Future[Any], list[Any], str, TopicPartition]] = field(
        default_factory=list
    )
    """Per submitted batch: its delivery future, the source records it holds (in order, so
    the i-th record landed at the batch's base offset + i), the target topic and the source
    partition (fetched records carry no topic or partition: see :mod:`aa.mirror.batches`)."""
    copied: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    timestamps: list[int] = field(default_factory=list)
    held_bytes: int = 0
    """Key and value bytes reserved for it in the flow's in-flight budget (released once
    settled)."""
    malformed: FlowError | None = None
    """Set when a refused record stops the flow (``on_error: fail``): ``offsets`` stop at it."""
