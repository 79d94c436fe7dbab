"""The narrow interfaces the mirror flow runs against.

A flow knows nothing of topology files or loop-prevention modes: a :class:`Router` built from
the config (``aa.mirror.plan``) answers, per topic, where it goes, and per record, whether it is
forwarded and with which headers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Headers = Sequence[tuple[str, bytes]]


@dataclass(frozen=True, slots=True)
class Skip:
    """Do not copy: the record would loop (``reason`` is a metric label, low-cardinality)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """The record's provenance headers cannot be read; the flow stops or dead-letters it."""

    error: str


Route = list[tuple[str, bytes]] | Skip | Malformed
"""Forward with these headers, skip, or treat as malformed."""


class Router(Protocol):
    """Per-flow routing decisions; pure and fast (called per record on the hot path)."""

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...

    def subscription(self) -> str:
        """A regex of the source topics this flow consumes (new matches are picked up live)."""
        ...

    def target_topic(self, source_topic: str) -> str | None:
        """The name in the target DC, or ``None`` when the topic must not be copied."""
        ...

    def route(self, source_topic: str, partition: int, offset: int, headers: Headers) -> Route:
        """The headers to write in the target, or why not to copy the record."""
        ...

    def route_batch(
        self,
        source_topic: str,
        partition: int,
        records: Sequence[Any],
        believed: Callable[[int], bool] | None = None,
    ) -> list[Route]:
        """:meth:`route` for each record (anything with ``offset``, ``timestamp`` and
        ``headers``), in order; the flow calls this once per fetched partition batch. Each
        forward route is a new list the flow owns (it appends ``aa-ts`` to it in place).
        ``believed`` says which offsets lie in batches a mirror wrote into the source DC: only
        there do ``aa-*`` headers count (:mod:`aa.kafka.switch`)."""
        ...


class RunningFlow(Protocol):
    """One run of a flow as the supervisor drives it: a whole flow
    (:class:`aa.mirror.flow.MirrorFlow`) or this process's partition sets of one
    (:class:`aa.mirror.partition_sets.PartitionSetFlow`)."""

    load_control: Callable[[], Awaitable[Any]] | None
    """Reads the flow's stored pauses before its first fetch (set by the supervisor)."""

    async def run(self, stop: asyncio.Event) -> None:
        """Copy until ``stop``; raise what stopped the flow."""
        ...

    def partitions(self) -> Mapping[Any, int | None]:
        """The source partitions this run holds, each with its records not yet queued."""
        ...

    @property
    def topic_sync_error(self) -> str | None: ...
