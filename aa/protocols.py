"""The small interfaces aa's strategies implement (one module, so packages depend on these)."""

from __future__ import annotations

from typing import Any, Protocol


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
