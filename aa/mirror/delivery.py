"""Delivery strategies of a flow: how copied records and the source offsets they advance are
made durable together.

:class:`AtLeastOnce` commits the source offsets to the flow's consumer group on the source after
the target acknowledged everything before them (a crash re-copies: duplicates, never loss).
:class:`~aa.mirror.eos.ExactlyOnce` wraps each run of batches, their offset syncs and the source
offsets they advance in one transaction on the target. The flow calls the hooks in this order:
``start`` once; per fetched batch ``admit`` → ``before_forward`` → (forward, queue) →
``after_forward``; the commit loop calls ``commit(final=False)`` now and then and
``commit(final=True)`` when the flow drains (stop, rebalance, malformed record), and ``abort``
when the flow fails. Record counts are published when the delivery says the copies are durable:
on acknowledgement (at-least-once) or on commit (exactly-once; aborted copies are not counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from aiokafka import TopicPartition

if TYPE_CHECKING:
    from aa.mirror.flow import MirrorFlow
    from aa.mirror.settings import FlowSettings

Batch = dict[TopicPartition, list[Any]]


class Delivery(Protocol):
    transactional: bool
    """Copies count once committed (``flow.publish_counts``), not once acknowledged."""

    def group_id(self) -> str | None:
        """The source consumer group (``None``: no group, every partition assigned here)."""
        ...

    def producer_options(self) -> dict[str, Any]: ...

    async def start(self, flow: MirrorFlow) -> None: ...

    def admit(self, flow: MirrorFlow, batch: Batch) -> Batch:
        """Drop records already copied (exactly-once resumes from the target's offsets)."""
        ...

    async def before_forward(self) -> None: ...

    async def after_forward(self, flow: MirrorFlow) -> None: ...

    async def commit(self, flow: MirrorFlow, *, final: bool) -> None: ...

    async def abort(self, flow: MirrorFlow) -> None:
        """The flow failed: undo what is not durable yet (never raises)."""
        ...


class AtLeastOnce:
    """Commit settled source offsets to the flow's group on the source (the default)."""

    transactional = False

    def __init__(self, settings: FlowSettings) -> None:
        self._settings = settings

    def group_id(self) -> str | None:
        return self._settings.group_id

    def producer_options(self) -> dict[str, Any]:
        return {}

    async def start(self, flow: MirrorFlow) -> None:
        return None

    def admit(self, flow: MirrorFlow, batch: Batch) -> Batch:
        return batch

    async def before_forward(self) -> None:
        return None

    async def after_forward(self, flow: MirrorFlow) -> None:
        return None

    async def commit(self, flow: MirrorFlow, *, final: bool) -> None:
        await flow.commit_to_source_group()

    async def abort(self, flow: MirrorFlow) -> None:
        return None  # nothing to undo: uncommitted source offsets are simply re-copied


def delivery_for(settings: FlowSettings) -> Delivery:
    if settings.delivery == "exactly-once":
        from aa.mirror.eos import ExactlyOnce

        return ExactlyOnce(settings)
    return AtLeastOnce(settings)
