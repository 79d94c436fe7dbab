"""The small interfaces aa's strategies implement (one module, so packages depend on these)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aa.provenance import LocalStamp


class ReplicationPolicy(Protocol):
    """How topic names carry (or do not carry) the DC that owns them; modelled on MirrorMaker
    2's ``ReplicationPolicy``. Pure and cheap; called once per topic, never per record."""

    def format_remote_topic(self, source_dc: str, topic: str) -> str:
        """The name ``topic`` of ``source_dc`` gets in another DC."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """The DC whose name prefixes ``topic``, or ``None`` for an unprefixed name."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """The name ``topic`` has in its source DC (the prefix removed), or ``None`` when the
        name carries no DC prefix."""
        ...

    def original_topic(self, topic: str) -> str:
        """``topic`` with every DC prefix removed (MM2's recursive ``originalTopic``)."""
        ...

    def is_internal_topic(self, topic: str) -> bool:
        """True for topics that are never copied: Kafka's (``__*``), MM2's and aa's own."""
        ...


class ProcessControl(Protocol):
    """What the admin API of `aa run` asks of the process (:mod:`aa.observe.admin`). Each call
    answers a JSON-able document; a refusal the caller can fix raises
    :class:`~aa.errors.AaError` with the reason."""

    def state(self) -> dict[str, Any]:
        """Flows, their topics and partitions, with their states."""
        ...

    async def pause(
        self, flow: str, topic: str | None, partition: int | None, note: str
    ) -> dict[str, Any]: ...

    async def resume(
        self, flow: str, topic: str | None, partition: int | None
    ) -> dict[str, Any]: ...

    async def set_rate(self, flow: str, bytes_per_s: float | None) -> dict[str, Any]:
        """``None``: back to the topology's rate limit."""
        ...

    async def reload(self) -> dict[str, Any]:
        """Re-read the topology file and apply it (an invalid one changes nothing)."""
        ...


@dataclass(frozen=True, slots=True)
class SchemaRefusal:
    """Why a record whose key or value carries a schema id is not copied: the source registry
    does not know the id, or the target refuses its schema. ``kind`` is a refusal kind (a
    metric label, :data:`aa.mirror.refusals.REFUSED`); ``detail`` names the id and the fix."""

    kind: str
    detail: str


Translate = Callable[
    [bytes | None, bytes | None], tuple[bytes | None, bytes | None] | SchemaRefusal
]
"""One topic's translation of a record's key and value: both with their ids replaced (every
other byte kept), or the refusal of the record. Synchronous and cheap: a dict lookup per id."""


class SchemaIds(Protocol):
    """A flow's schema-id translation (:mod:`aa.schemas`), as the mirror sees it: the ids of a
    fetched batch are made known (async: registries answer over HTTP) before it is routed, so
    routing translates each record synchronously."""

    def translation(self, topic: str) -> Translate | None:
        """How records of source ``topic`` are translated; ``None``: they carry no framed key
        or value (called once per topic and fetch, not per record)."""
        ...

    async def resolve(
        self, parts: Sequence[tuple[str, Sequence[Any]]], stop: asyncio.Event
    ) -> bool:
        """Make the id of every framed key and value in ``parts`` (one fetched batch: per
        source topic, decoded records) known, or refused, registering schemas in the target as
        needed; while a registry does not answer, wait for it. False when ``stop`` was set
        while waiting (the batch must not be routed)."""
        ...


Headers = Sequence[tuple[str, bytes]]


@dataclass(frozen=True, slots=True)
class Skip:
    """Do not copy: the record would loop (``reason`` is a metric label, low-cardinality)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """The record's provenance headers cannot be read; the flow stops or dead-letters it."""

    error: str


class FetchedRecord(Protocol):
    """One fetched record as the mirror reads it: aiokafka's own record object, or aa's
    (:class:`aa.kafka.records.Record`, where aiokafka cannot decode a batch)."""

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def headers(self) -> Sequence[tuple[str, bytes | None]]: ...


Route = list[tuple[str, bytes]] | Skip | Malformed
"""Forward with these headers, skip, or treat as malformed."""


class Router(Protocol):
    """Per-flow routing decisions; pure and fast (called per record on the hot path). A flow
    knows nothing of topology files or loop-prevention modes: a router built from the config
    (:class:`aa.policy.FlowRouter`) answers, per topic, where it goes, and per record, whether
    it is forwarded and with which headers."""

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

    def forwards_mirrored(self) -> bool:
        """Whether the flow ever forwards a record a mirror wrote into its source DC (false: it
        skips mirror-written batches unread, :class:`aa.kafka.switch.BatchSkipper`)."""
        ...

    def local_stamp(self, topic: str, partition: int) -> LocalStamp | None:
        """The provenance every local record of ``topic``/``partition`` gets, for the batch
        path (:mod:`aa.mirror.restamp`); ``None``: the flow takes the record path only."""
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
