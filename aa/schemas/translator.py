"""One flow's schema-id translation (the :class:`~aa.protocols.SchemaIds` the mirror uses).

Before a fetched batch is routed, :meth:`SchemaTranslator.resolve` finds the ids its framed
keys and values carry that the flow does not know yet and learns each one: the schema is
copied into the target registry (:mod:`aa.schemas.copy`), the pair remembered in the ids topic
(:mod:`aa.schemas.store`) and in memory. Routing then swaps ids record by record with a dict
lookup (:mod:`aa.schemas.wire`). An id the source registry does not know, or whose schema the
target refuses, is learned as a refusal: its records are refused under the flow's
``on_error``, never copied with a wrong id.

A registry that does not answer stalls this flow only: ``resolve`` waits for it (one
``schema_registry_unavailable`` line when it starts waiting, one ``schema_registry_back`` when
it answers again), holding the batch, so nothing after it is routed or committed. It waits
outside the flow's routing lock, so a rebalance is not held up, and returns at once when the
flow stops.

Memory: at most ``schemas.cache_size`` ids, plus those of the batch being routed (never
forgotten before it is routed: evictions happen at the start of the next ``resolve``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaProducer

from aa.admin import ClusterAdmin
from aa.config import names
from aa.config.registries import SchemaTranslation, matches
from aa.lifecycle import AsyncResource, started
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from aa.offsets.writer import ensure_internal_topic
from aa.protocols import SchemaRefusal, Translate
from aa.schemas import store
from aa.schemas.copy import SchemaCopier
from aa.schemas.registry import Registry, RegistryRefused, RegistryUnavailable
from aa.schemas.wire import HEADER, MAGIC, IdTable, header, topic_translation

MAX_WAIT_S = 10.0
"""The longest pause between two tries of a registry that does not answer."""
REFUSAL_TTL_S = 30.0
"""How long a registry's refusal of an id stands before the flow asks again: a failed topic's
retry, or ``aa resume``, after the registry was fixed then copies the record."""


class SchemaTranslator(AsyncResource):
    """Translates the schema ids of one flow's framed records (its ``schemas`` section)."""

    def __init__(
        self, settings: FlowSettings, admin: ClusterAdmin, metrics: Metrics, log: Any
    ) -> None:
        assert settings.schemas is not None
        self.settings, self.config = settings, settings.schemas
        self._admin, self._metrics, self._log = admin, metrics, log
        self.topic = names.for_flow(self.config.ids_topic, settings.source, settings.target)
        self.table = IdTable()
        self._topics: dict[str, Translate | None] = {}
        self._unframed: set[str] = set()
        self._refused: dict[bytes, float] = {}
        """When each refused id's refusal was learned (:data:`REFUSAL_TTL_S`)."""
        self._down_since: float | None = None
        self.source, self.target = (
            _registry("source", self.config),
            _registry("target", self.config),
        )
        self._copier = SchemaCopier(self.source, self.target)

    _producer: AIOKafkaProducer

    async def _open(self) -> None:
        s = self.settings
        await self.source.start()
        await self.target.start()
        await ensure_internal_topic(self._admin, self.topic)
        learned = await store.load(
            self.topic, s.target_client, self.source.url, self.target.url, self.config.cache_size
        )
        for source_id, target_id in learned.items():
            self.table.headers[header(source_id)] = header(target_id)
        self._producer = AIOKafkaProducer(**s.target_client, acks="all", enable_idempotence=True)
        await started(self._producer)
        self._log.info("schema_translation_started", ids_topic=self.topic, known=len(learned))

    async def _close(self) -> None:
        with contextlib.suppress(AttributeError):  # never started
            await self._producer.stop()
        await self.source.close()
        await self.target.close()

    def translation(self, topic: str) -> Translate | None:
        if topic not in self._topics:
            keys, values = self._framed(topic)
            self._topics[topic] = (
                topic_translation(self.table, keys=keys, values=values) if keys or values else None
            )
        return self._topics[topic]

    def _framed(self, topic: str) -> tuple[bool, bool]:
        """Whether ``topic``'s keys, and its values, are framed."""
        return matches(self.config.keys, topic), matches(self.config.values, topic)

    async def resolve(
        self, parts: Sequence[tuple[str, Sequence[Any]]], stop: asyncio.Event
    ) -> bool:
        """Learn every id the framed keys and values of ``parts`` (per topic, its decoded
        records) carry; False when ``stop`` was set while a registry was away."""
        self._evict()
        missing: set[int] = set()
        for topic, records in parts:
            keys, values = self._framed(topic)
            if keys:
                missing |= self.table.missing(r.key for r in records)
            if values:
                missing |= self.table.missing(r.value for r in records)
                self._check_framed(topic, records)
        for source_id in sorted(missing):  # older ids first: a subject's versions in order
            if not await self._learn(source_id, stop):
                return False
        return True

    async def _learn(self, source_id: int, stop: asyncio.Event) -> bool:
        pause = 1.0
        while True:
            try:
                target_id = await self._copier.copy(source_id)
            except RegistryRefused as exc:
                refusal = self.table.headers[header(source_id)] = self._refusal(source_id, exc)
                self._refused[header(source_id)] = time.monotonic()
                self._log.warning("schema_id_refused", kind=refusal.kind, detail=refusal.detail)
                return True
            except RegistryUnavailable as exc:
                self._unavailable(exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), pause)
                if stop.is_set():
                    return False
                pause = min(pause * 2, MAX_WAIT_S)
                continue
            break
        if self._down_since is not None:
            waited = round(time.monotonic() - self._down_since, 1)
            self._log.info("schema_registry_back", waited_s=waited)
            self._down_since = None
        await store.remember(
            self._producer, self.topic, self.source.url, self.target.url, source_id, target_id
        )
        self.table.headers[header(source_id)] = header(target_id)
        self._log.info("schema_id_translated", source_id=source_id, target_id=target_id)
        return True

    def _refusal(self, source_id: int, exc: RegistryRefused) -> SchemaRefusal:
        if exc.role == "source":
            return SchemaRefusal(
                "schema-unknown",
                f"schema id {source_id}: {exc}; a copy would carry an id that "
                f"{self.settings.target}'s registry does not have, or has for another schema",
            )
        return SchemaRefusal(
            "schema-refused",
            f"schema id {source_id}: {exc}; make the subject in {self.settings.target}'s "
            "registry accept it (its compatibility level or versions), then restart the flow",
        )

    def _unavailable(self, exc: RegistryUnavailable) -> None:
        if self._down_since is not None:
            return
        self._down_since = time.monotonic()
        s = self.settings
        self._metrics.errors.labels(**s.labels, kind="schema-registry-unavailable").inc()
        self._log.warning(
            "schema_registry_unavailable",
            error=str(exc),
            detail=f"{s.name} waits for it: nothing after the first record that needs it is "
            "copied or committed until it answers; other flows go on",
        )

    def _check_framed(self, topic: str, records: Sequence[Any]) -> None:
        """Warn once per topic about values that are not framed (copied as they are)."""
        if topic in self._unframed:
            return
        for r in records:
            v = r.value
            if v is not None and (len(v) < HEADER or v[0] != MAGIC):
                self._unframed.add(topic)
                self._log.warning(
                    "schema_unframed_value",
                    topic=topic,
                    offset=r.offset,
                    detail="schemas.values names this topic but this value does not start "
                    "with the magic byte 0 and a schema id: copied as it is (as are later "
                    "ones; this is said once per topic)",
                )
                return

    def _evict(self) -> None:
        """Forget refusals older than :data:`REFUSAL_TTL_S`, and the oldest ids past
        ``cache_size`` (before a batch's ids are learned)."""
        headers = self.table.headers
        if self._refused:
            old = time.monotonic() - REFUSAL_TTL_S
            for h in [h for h, at in self._refused.items() if at <= old]:
                del self._refused[h]
                headers.pop(h, None)
        extra = len(headers) - self.config.cache_size
        if extra > 0:
            for h in list(headers)[:extra]:
                del headers[h]
                self._refused.pop(h, None)


def _registry(role: str, config: SchemaTranslation) -> Registry:
    return Registry(
        role,
        getattr(config, f"{role}_url"),
        username=getattr(config, f"{role}_username"),
        password=getattr(config, f"{role}_password"),
        cafile=getattr(config, f"{role}_cafile"),
    )
