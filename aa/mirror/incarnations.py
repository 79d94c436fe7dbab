"""Which incarnation of each source topic an exactly-once flow's stored positions belong to.

A topic deleted and created again under the same name gets a new topic id and offsets from 0
again; a position stored for the old one means nothing in the new one (resuming from it skips
the new records below it, and drops the rest as "already copied"). The flow stores each
position with its topic's id, drops positions of an older incarnation at start, and while it
runs asks for the ids every topic-sync interval (:meth:`Incarnations.watch`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from aa.admin import ClusterAdmin
from aa.deadlines import finished_within
from aa.mirror.errors import FlowError
from aa.mirror.settings import FlowSettings
from aa.offsets.resume import copied_ends, same_incarnation, still_held

WATCH_TIMEOUT_S = 10.0
"""How long :meth:`Incarnations.watch` waits for the source's answer (a stop waits no longer)."""


class Incarnations:
    """Source topic -> the id of the incarnation this flow run copies."""

    def __init__(self, settings: FlowSettings, admin: ClusterAdmin | None) -> None:
        self._settings = settings
        self._admin = admin
        self._ids: dict[str, str] = {}

    def id(self, topic: str) -> str | None:
        return self._ids.get(topic)

    @property
    def known(self) -> Mapping[str, str]:
        """Every id learned so far (a live view: the offset-sync writer stamps syncs with it)."""
        return self._ids

    async def _read(self, topics: Iterable[str]) -> dict[str, str]:
        names = set(topics)
        if self._admin is None or not names:
            return {}
        try:
            return await self._admin.topic_ids(names)
        except KafkaError as exc:
            raise FlowError(
                f"{self._settings.name}: could not read the ids of its source topics from "
                f"{self._settings.source}: {exc!r}",
                kind="source-metadata",
                retriable=True,
            ) from exc

    async def recreated(self, stored: Mapping[TopicPartition, str | None]) -> dict[str, str]:
        """Learn the ids of the stored positions' topics; return the topics whose stored
        positions belong to an older incarnation (topic -> the stored id). A position stored
        without an id (before ids were stored) is believed."""
        self._ids.update(await self._read({tp.topic for tp in stored}))
        out = {}
        for tp, tid in stored.items():
            now = self._ids.get(tp.topic)
            if tid is not None and now is not None and tid != now:
                out[tp.topic] = tid
        return out

    async def synced_positions(
        self,
        consumer: AIOKafkaConsumer,
        group: Mapping[TopicPartition, int],
        *,
        require_id: bool,
        recreated: Iterable[str] = (),
    ) -> dict[TopicPartition, int]:
        """Where the flow's committed offset syncs say its copy of each partition ended, for
        the partitions the syncs took further than ``group`` (the group's committed offsets),
        of the topic incarnation the source holds now (:func:`same_incarnation`), and that the
        source still reaches. Syncs of ``recreated`` topics are not used."""
        s = self._settings
        ends = await copied_ends(s.sync_topic, s.target_client, s.source, s.target)
        skip = set(recreated)
        ends = {tp: e for tp, e in ends.items() if tp.topic not in skip}
        if not ends:
            return {}
        now = await self._read({tp.topic for tp in ends})  # the topics the source still has
        self._ids.update(now)
        # a topic deleted since has nothing to resume (and asking for its offsets would wait
        # out the request timeout, then fail for every partition)
        ends = {tp: e for tp, e in ends.items() if tp.topic in now}
        trusted = same_incarnation(ends, now, require_id=require_id)
        ahead = {tp: end for tp, end in trusted.items() if end > group.get(tp, 0)}
        return await still_held(consumer, ahead) if ahead else {}

    async def learn(self, topics: Iterable[str]) -> None:
        """Learn the ids of topics first committed now. If the source does not answer they
        are stored without one, and asked for again at the next commit."""
        new = set(topics) - self._ids.keys()
        if new:
            with contextlib.suppress(FlowError):
                self._ids.update(await self._read(new))

    async def watch(self, stop: asyncio.Event) -> None:
        """Every topic-sync interval until ``stop``: fail the run (retriable: the open
        transaction is aborted and the flow restarts, then drops the old positions) when a
        source topic now has another id. A source that does not answer within
        :data:`WATCH_TIMEOUT_S` is asked again next interval: the fetches notice a DC down."""
        s = self._settings
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), s.topic_sync_interval_s)
            if stop.is_set() or not self._ids:
                continue
            ask = asyncio.ensure_future(self._read(self._ids))
            if not await finished_within(ask, WATCH_TIMEOUT_S):
                continue
            if isinstance(ask.exception(), FlowError):  # the source did not answer
                continue
            now = ask.result()  # any other failure is a defect: it fails the run
            changed = sorted(t for t, i in self._ids.items() if now.get(t, i) != i)
            if changed:
                raise FlowError(
                    f"{s.name}: source topic {changed[0]} was deleted and created again in "
                    f"{s.source} while copying; the open transaction is aborted and the flow "
                    "restarts to copy it from its beginning",
                    kind="source-topic-recreated",
                    retriable=True,
                )
