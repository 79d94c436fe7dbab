"""Typed wrappers over aiokafka's admin client: topics, partitions, configs.

aiokafka's admin calls return raw protocol responses and do not raise on per-topic errors;
these helpers turn them into values and domain errors, once, for the mirror, `aa plan` and the
tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewPartitions
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import InvalidPartitionsError

from aa.coordinators import CoordinatorBlocked, Kind, blocked
from aa.errors import AaError
from aa.kafka.create_topics import BROKER_DEFAULT, CreateTopics
from aa.kafka.requests import cluster_metadata, to_controller
from aa.kafka.topic_ids import topic_ids, writable
from aa.lifecycle import AsyncResource

TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTHORIZATION_FAILED = 29
INVALID_REPLICATION_FACTOR = 38
REFUSED_FOR_GOOD = {17: "INVALID_TOPIC_EXCEPTION", 40: "INVALID_CONFIG", 44: "POLICY_VIOLATION"}
"""CreateTopics errors no retry changes: the name, a config the cluster refuses, its policy."""
TOPIC_NAME_MAX = 249
DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs config_source: set on the topic itself


class AdminError(AaError):
    """A cluster refused an admin request; the message names the cluster, topic and reason."""


class TopicRefused(AdminError):
    """A cluster refuses to create a topic for a reason no retry changes (see
    :data:`REFUSED_FOR_GOOD`); the message names the cluster, the topic and why. ``refused``:
    each topic refused and its message; ``created``: the others of the request, created."""

    def __init__(
        self, message: str, refused: dict[str, str] | None = None, created: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.refused = refused or {}
        self.created = created or []


class AdminNotAuthorized(AdminError):
    """An ACL of ``dc`` refused an admin request: ``doing`` (what was refused), ``operation``
    and ``resource`` (``--topic NAME``) say what to grant, as ``kafka-acls.sh`` spells them."""

    def __init__(self, dc: str, doing: str, operation: str, resource: str) -> None:
        super().__init__(f"{dc} does not allow this client to {doing}")
        self.dc, self.doing, self.operation, self.resource = dc, doing, operation, resource


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int
    internal: bool


def topics_of(metadata: Any) -> dict[str, TopicInfo]:
    """The topics of a metadata response without an error, read by field position.

    aiokafka's ``describe_topics`` turns the whole response into dicts first, one per partition
    and replica list; every flow's topic sync asks for every topic of two clusters, and that
    conversion alone was ~2% of a W3 process's CPU."""
    layout = metadata.SCHEMA.fields[metadata.SCHEMA.names.index("topics")].array_of.names
    error, name, partitions = (layout.index(f) for f in ("error_code", "topic", "partitions"))
    internal = layout.index("is_internal") if "is_internal" in layout else None
    return {
        t[name]: TopicInfo(t[name], len(t[partitions]), internal is not None and t[internal])
        for t in metadata.get_item("topics")
        if t[error] == 0
    }


class ClusterAdmin(AsyncResource):
    """One admin connection to one DC's cluster. Use as ``async with ClusterAdmin(...)``."""

    def __init__(
        self, dc: str, *, replication_factor: int = BROKER_DEFAULT, **client_kwargs: Any
    ) -> None:
        self.dc = dc
        self.replication_factor = replication_factor
        """Replicas of the topics :meth:`create_topics` creates (-1: the cluster's default;
        the topology's ``topic_sync.replication_factor``)."""
        self._client = AIOKafkaAdminClient(**client_kwargs)
        self._timeout_ms = int(client_kwargs.get("request_timeout_ms", 40_000))

    async def _open(self) -> None:
        await self._client.start()

    async def _close(self) -> None:
        await self._client.close()

    async def coordinator_blocked(self, kind: Kind) -> CoordinatorBlocked | None:
        """Why this cluster cannot host a ``kind`` coordinator (see :mod:`aa.coordinators`)."""
        return await blocked(self._client, kind, self.dc)

    async def topics(self) -> dict[str, TopicInfo]:
        """Every topic with its partition count (internal topics flagged)."""
        return topics_of(await cluster_metadata(self._client))

    async def brokers(self) -> int:
        return len((await self._client.describe_cluster())["brokers"])

    async def create_topics(
        self,
        topics: Iterable[tuple[str, int, Mapping[str, str]]],
        replication_factor: int | None = None,
    ) -> list[str]:
        """Create ``(name, partitions, configs)``; return the names created (existing: skipped).

        ``replication_factor=None`` means :attr:`replication_factor` (by default -1: the
        cluster's ``default.replication.factor``, not min(3, brokers listed at that moment,
        which left a topic created during a broker outage under-replicated for good).
        """
        todo = list(topics)
        if not todo:
            return []
        rf = self.replication_factor if replication_factor is None else replication_factor
        new = CreateTopics([(n, p, rf, dict(c)) for n, p, c in todo], self._timeout_ms)
        # aiokafka's create_topics stops at v3 (no -1): aa's own request, to the controller
        resp = (await to_controller(self._client, new)).to_object()
        created: list[str] = []
        refused: dict[str, str] = {}
        for err in resp["topic_errors"]:
            code = err["error_code"]
            if code == 0:
                created.append(err["topic"])
            elif code in REFUSED_FOR_GOOD:
                name = err["topic"]
                why = f"{REFUSED_FOR_GOOD[code]}: {err['error_message']}"
                if len(name) > TOPIC_NAME_MAX:
                    why = f"the name is {len(name)} characters, over Kafka's {TOPIC_NAME_MAX}"
                refused[name] = f"{self.dc} refuses to create topic {name} ({why})"
            elif code == INVALID_REPLICATION_FACTOR:
                asked = "its default.replication.factor" if rf == BROKER_DEFAULT else f"{rf}"
                raise AdminError(
                    f"{self.dc} cannot create topic {err['topic']} with {asked} replicas "
                    f"({err['error_message']}): start the brokers that are down, or set "
                    "topic_sync.replication_factor (or the cluster's default.replication.factor) "
                    "to what the cluster holds"
                )
            elif code != TOPIC_ALREADY_EXISTS:
                raise AdminError(
                    f"{self.dc}: creating topic {err['topic']} failed (error {code}): "
                    f"{err['error_message']}"
                )
        if refused:  # the others were created: said with it
            raise TopicRefused("; ".join(refused.values()), refused, created)
        return created

    async def add_partitions(self, topic: str, total: int) -> bool:
        """Grow ``topic`` to ``total`` partitions; ``False`` when it already had as many
        (another flow into this DC grew it first)."""
        try:
            await self._client.create_partitions({topic: NewPartitions(total)})
        except Exception as exc:  # aiokafka raises its own error classes
            if isinstance(exc, InvalidPartitionsError):
                have = (await self.topics()).get(topic)
                if have is not None and have.partitions >= total:
                    return False
            raise AdminError(
                f"{self.dc}: raising {topic} to {total} partitions failed: {exc}"
            ) from exc
        return True

    async def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """The configs set on each topic itself (not broker defaults); a topic that does not
        exist (any more) is left out, which is not the same as a topic with none set."""
        names = list(topics)
        if not names:
            return {}
        resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
        out: dict[str, dict[str, str]] = {}
        for resp in await self._client.describe_configs(resources):
            for res in resp.to_object()["resources"]:
                code, name = res["error_code"], res["resource_name"]
                if code == UNKNOWN_TOPIC_OR_PARTITION:
                    continue  # the topic vanished meanwhile; the next sync sees it
                if code == TOPIC_AUTHORIZATION_FAILED:
                    raise AdminNotAuthorized(
                        self.dc, f"read the configs of topic {name}", "DescribeConfigs",
                        f"--topic {name}",
                    )  # fmt: skip
                if code != 0:  # not "no configs": callers would set the other side's to none
                    raise AdminError(
                        f"{self.dc}: reading the configs of {name} failed (error {code}): "
                        f"{res['error_message']}"
                    )
                out[res["resource_name"]] = {
                    e["config_names"]: e["config_value"]
                    for e in res["config_entries"]
                    if e.get("config_source") == DYNAMIC_TOPIC_CONFIG
                    and e["config_value"] is not None
                }
        return out

    async def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's dynamic configs with ``configs`` (AlterConfigs semantics)."""
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs=dict(configs))
        for resp in await self._client.alter_configs([resource]):
            for res in resp.to_object()["resources"]:
                if res["error_code"] != 0:
                    raise AdminError(
                        f"{self.dc}: altering configs of {topic} failed (error "
                        f"{res['error_code']}): {res['error_message']}"
                    )

    async def delete_topics(self, topics: Iterable[str]) -> None:
        await self._client.delete_topics(list(topics))

    async def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Kafka's topic id (32 hex digits) of each of ``topics`` that exists
        (:mod:`aa.kafka.topic_ids`: a new id means the topic was deleted and created again)."""
        return await topic_ids(self._client, topics)

    async def writable(self, topics: Iterable[str]) -> dict[str, bool]:
        """Whether this client may write each of ``topics``, as the cluster's authorizer says
        (:func:`aa.kafka.topic_ids.writable`; topics it says nothing certain of left out)."""
        return await writable(self._client, topics)

    @property
    def raw(self) -> AIOKafkaAdminClient:
        """The aiokafka client, for calls not wrapped here (groups, offsets)."""
        return self._client


async def metadata_failure(
    dc: str, client: Mapping[str, Any], timeout_s: float
) -> BaseException | None:
    """``None`` when ``dc``'s cluster answers a metadata request within ``timeout_s``, else
    what went wrong (the `aa` commands' reachability checks and a flow waiting out a DC that
    was down both ask this way)."""
    kwargs = {**client, "request_timeout_ms": int(timeout_s * 1000)}
    try:
        async with asyncio.timeout(timeout_s), ClusterAdmin(dc, **kwargs) as admin:
            await admin.brokers()
    except Exception as exc:  # noqa: BLE001 - aiokafka raises its own classes, not only OSError
        return exc
    return None
