"""Why a cluster has no group or transaction coordinator, when it never will by waiting.

A cluster hosts consumer groups on its ``__consumer_offsets`` topic and transactions on
``__transaction_state``, both created on first use with the brokers' own replication factor
(``offsets.topic.replication.factor``, ``transaction.state.log.replication.factor``; Kafka's
default is 3). A cluster with fewer live brokers than that cannot create them, and every
coordinator lookup answers "not available" for as long as that lasts: Kafka's clients wait on
it forever without a word. :func:`blocked` tells that case apart (the topic is missing and the
setting exceeds the live brokers) so that callers can say so, with the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from aa.errors import AaError
from aa.kafka.requests import cluster_metadata

Kind = Literal["group", "transaction"]
INTERNAL: dict[Kind, tuple[str, str]] = {
    "group": ("__consumer_offsets", "offsets.topic.replication.factor"),
    "transaction": ("__transaction_state", "transaction.state.log.replication.factor"),
}
"""Per coordinator kind: the internal topic it lives on and the broker setting of its RF."""
CHECK_AFTER_S = 5.0
"""How long a coordinator may keep a caller waiting before :func:`waited` asks why."""
_T = TypeVar("_T")


class CoordinatorBlocked(AaError):
    """No coordinator of ``kind`` until the cluster's brokers change; the message says why and
    what to change. Waiting may still end it (brokers started, their setting lowered and the
    brokers restarted), so it is not a reason to stop for good."""

    def __init__(self, kind: Kind, why: str) -> None:
        super().__init__(why)
        self.kind = kind


async def blocked(client: AIOKafkaAdminClient, kind: Kind, where: str) -> CoordinatorBlocked | None:
    """Why ``client``'s cluster (``where``: its DC or address, for the message) cannot host a
    ``kind`` coordinator: its internal topic is missing and its brokers' replication factor for
    it exceeds the live brokers. ``None`` when that is not the cause, or it cannot be told (a
    refused or failed describe)."""
    topic, setting = INTERNAL[kind]
    try:
        cluster = (await cluster_metadata(client)).to_object()
        if any(t["topic"] == topic for t in cluster["topics"]):
            return None
        brokers = cluster["brokers"]
        broker = str(brokers[0]["node_id"])
        [resp] = await client.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, broker, configs={setting: None})]
        )
        values: dict[str, Any] = {
            e["config_names"]: e["config_value"]
            for res in resp.to_object()["resources"]
            if res["error_code"] == 0
            for e in res["config_entries"]
        }
        rf = int(values[setting])
    except Exception:  # noqa: BLE001 (a diagnosis only: the caller's own error stands)
        return None
    live = len(brokers)
    if rf <= live:
        return None
    return CoordinatorBlocked(
        kind,
        f"the brokers of {where} cannot create {topic}, where {kind} coordinators live: "
        f"{setting}={rf} but the cluster has {live} live broker{'s' if live != 1 else ''}. "
        f"Set {setting}={live} (or less) in the brokers' configuration and restart them, or "
        "start more brokers",
    )


async def unless_blocked(
    ready: Callable[[], object],
    why: Callable[[], Awaitable[CoordinatorBlocked | None]],
    stop: asyncio.Event,
) -> None:
    """After :data:`CHECK_AFTER_S`, unless ``stop`` or ``ready()`` is truthy (a consumer's
    partitions, once it joined its group), raise what ``why`` finds blocks the coordinator. A
    consumer waits on a missing group coordinator without a word; this is what tells it."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), CHECK_AFTER_S)
    if not stop.is_set() and not ready() and (cause := await why()) is not None:
        raise cause


async def waited(
    call: Awaitable[_T], why: Callable[[], Awaitable[CoordinatorBlocked | None]]
) -> _T:
    """``call`` (which waits on a coordinator), or what ``why`` finds blocks that coordinator
    (e.g. ``partial(admin.coordinator_blocked, "transaction")``), asked after every
    :data:`CHECK_AFTER_S` of waiting."""
    task = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=CHECK_AFTER_S)
            if done:
                return task.result()
            if (cause := await why()) is not None:
                raise cause
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
