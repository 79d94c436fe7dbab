"""Consumer-group offsets: read them, tell whether a group is active, and move them.

aiokafka's admin client cannot alter group offsets, so :func:`commit_group_offsets` commits
through a consumer carrying the group id with the partitions assigned manually (it never joins
the group) — after checking the group has no members, because moving an active group's offsets
under it rewinds or skips its consumers (MM2's KAFKA-19794).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import (
    CoordinatorLoadInProgressError,
    GroupCoordinatorNotAvailableError,
    NotCoordinatorError,
)
from aiokafka.structs import OffsetAndMetadata

from aa.coordinators import blocked
from aa.errors import AaError
from aa.lifecycle import started

ACTIVE_STATES = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance"})
# A fresh cluster creates __consumer_offsets on the first group request and answers "no
# coordinator" until it is loaded: these are retried (bounded), anything else raises.
COORDINATOR_RETRY_S = 30.0
_T = TypeVar("_T")


async def _with_coordinator(
    client: Mapping[str, Any], admin: AIOKafkaAdminClient, call: Callable[[], Awaitable[_T]]
) -> _T:
    """``call()``, retried while the group coordinator is missing or loading; at once
    :class:`~aa.coordinators.CoordinatorBlocked` when the cluster cannot host one at all."""
    deadline = time.monotonic() + COORDINATOR_RETRY_S
    asked = False
    while True:
        try:
            return await call()
        except (
            GroupCoordinatorNotAvailableError,
            CoordinatorLoadInProgressError,
            NotCoordinatorError,
        ) as exc:
            if not asked and isinstance(exc, GroupCoordinatorNotAvailableError):
                asked = True
                if (
                    why := await blocked(admin, "group", str(client.get("bootstrap_servers")))
                ) is not None:
                    raise why from exc
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


class GroupError(AaError):
    """A group cannot be read or moved; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class GroupState:
    group: str
    state: str
    members: int

    @property
    def active(self) -> bool:
        return self.members > 0 or self.state in ACTIVE_STATES


async def list_groups(client: Mapping[str, Any]) -> list[str]:
    admin = AIOKafkaAdminClient(**client)
    await started(admin)
    try:
        return sorted(
            g for g, _ in await _with_coordinator(client, admin, admin.list_consumer_groups)
        )
    finally:
        await admin.close()


async def group_offsets(
    client: Mapping[str, Any], group: str, admin: AIOKafkaAdminClient | None = None
) -> dict[TopicPartition, int]:
    """The group's committed offsets (``{}`` when it has none); through ``admin`` when given
    (a started client of that cluster, kept open by the caller)."""
    if admin is not None:
        raw = await _with_coordinator(
            client, admin, lambda: admin.list_consumer_group_offsets(group)
        )
        return {tp: m.offset for tp, m in raw.items() if m.offset >= 0}
    own = await started(AIOKafkaAdminClient(**client))
    try:
        return await group_offsets(client, group, own)
    finally:
        await own.close()


async def group_state(client: Mapping[str, Any], group: str) -> GroupState:
    admin = AIOKafkaAdminClient(**client)
    await started(admin)
    try:
        [resp] = await _with_coordinator(
            client, admin, lambda: admin.describe_consumer_groups([group])
        )
    finally:
        await admin.close()
    for g in resp.to_object()["groups"]:
        if g["group"] == group:
            return GroupState(group, g["state"], len(g["members"]))
    return GroupState(group, "Dead", 0)


async def commit_group_offsets(
    client: Mapping[str, Any], dc: str, group: str, offsets: Mapping[TopicPartition, int]
) -> None:
    """Set ``group``'s offsets in ``dc``; refuses while the group has members there."""
    state = await group_state(client, group)
    if state.active:
        raise GroupError(
            f"group {group} is active in {dc} (state {state.state}, {state.members} members): "
            "stop its consumers there first; aa never moves an active group"
        )
    consumer = AIOKafkaConsumer(**client, group_id=group, enable_auto_commit=False)
    await started(consumer)
    try:
        consumer.assign(sorted(offsets))
        await consumer.commit({tp: OffsetAndMetadata(o, "aa") for tp, o in offsets.items()})
    finally:
        await consumer.stop()
