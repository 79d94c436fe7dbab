"""Read a small internal topic (offset syncs, stored EOS offsets, checkpoints, heartbeats) from
the beginning to its end, then incrementally: the "remember" half of MM2's writer/store split.

``catch_up`` returns only after every partition was read up to the end offset it saw when the
call began, so a caller knows it has seen everything written (and, with ``read_committed``,
committed) before that moment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from aa.errors import AaError
from aa.kafka.consumer import refresh_metadata
from aa.lifecycle import AsyncResource
from aa.logs import get_logger

_log = get_logger("aa.tail")


class TopicReader(AsyncResource):
    """Tails every partition of one topic without a consumer group (from the beginning, or
    from the newest ``last`` records of each partition)."""

    def __init__(
        self,
        topic: str,
        client: Mapping[str, Any],
        *,
        isolation_level: str = "read_committed",
        last: int | None = None,
    ) -> None:
        self.topic = topic
        self._last = last
        self._options = {
            **client,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "isolation_level": isolation_level,
        }
        self._assigned: set[TopicPartition] = set()

    _consumer: AIOKafkaConsumer
    """Made by each open, not by ``__init__``: a reader built and closed without being started
    (the lag export's, when the source DC is down) holds no client to leak."""

    async def _open(self) -> None:
        self._consumer = AIOKafkaConsumer(**self._options)
        self._assigned = set()
        await self._consumer.start()
        # aiokafka's no-group coordinator starts a task that must run once before stop()
        # (stopping it unstarted raises CancelledError).
        await asyncio.sleep(0)

    async def _close(self) -> None:
        await self._consumer.stop()

    async def _assign(self) -> None:
        await refresh_metadata(self._consumer)
        parts = self._consumer.partitions_for_topic(self.topic) or set()
        tps = {TopicPartition(self.topic, p) for p in parts}
        if tps != self._assigned:
            new = tps - self._assigned
            self._consumer.assign(sorted(tps))
            if new and self._last is None:
                await self._consumer.seek_to_beginning(*new)
            elif new:  # only the newest ``last`` records of each new partition
                begins = await self._consumer.beginning_offsets(list(new))
                ends = await self._consumer.end_offsets(list(new))
                for tp in new:
                    self._consumer.seek(tp, max(begins[tp], ends[tp] - self._last))
            self._assigned = tps

    async def catch_up(self, timeout: float = 30.0) -> list[Any]:
        """Every record written since the last call (all of them on the first), up to the end
        offsets as of now; ``[]`` while the topic does not exist."""
        out: list[Any] = []
        await self.catch_up_each(out.extend, timeout)
        return out

    async def catch_up_each(
        self, handle: Callable[[list[Any]], object], timeout: float = 30.0
    ) -> int:
        """Like :meth:`catch_up`, handing each fetched batch to ``handle`` instead of
        collecting them (memory stays that of one batch); returns the records read."""
        await self._assign()
        if not self._assigned:
            return 0
        ends: dict[TopicPartition, int] = await self._consumer.end_offsets(list(self._assigned))
        n = 0
        deadline = time.monotonic() + timeout
        while True:
            behind = [tp for tp, end in ends.items() if await self._consumer.position(tp) < end]
            if not behind:
                return n
            if time.monotonic() > deadline:
                raise AaError(
                    f"reading {self.topic} to its end took more than {timeout}s "
                    f"({len(behind)} partitions behind)"
                )
            batch = await self._consumer.getmany(*behind, timeout_ms=200)
            for records in batch.values():
                handle(records)
                n += len(records)
            await asyncio.sleep(0)


async def read_topic(
    topic: str, client: Mapping[str, Any], *, isolation_level: str = "read_committed"
) -> list[Any]:
    """Every record of ``topic`` up to its current end (``[]`` when it does not exist)."""
    async with TopicReader(topic, client, isolation_level=isolation_level) as reader:
        return await reader.catch_up()


class Unreadable:
    """Records of an internal topic that are not what it holds (written there by mistake):
    a reader skips each one (:meth:`skip`) instead of failing every read, and :meth:`warn`
    logs ``event`` once for what was skipped since it last did. Every reader that uses it
    errs safely when it skips: behind, or a copy again, never past data."""

    def __init__(self, event: str, detail: str) -> None:
        self.event, self.detail = event, detail
        self.count = 0
        self.last = ""
        self._warned = 0

    def skip(self, record: Any, exc: BaseException) -> None:
        self.count += 1
        self.last = f"offset {record.offset}: {exc}"

    def warn(self, topic: str) -> None:
        if self.count > self._warned:
            _log.warning(
                self.event,
                topic=topic,
                skipped=self.count - self._warned,
                last=self.last,
                detail=self.detail,
            )
            self._warned = self.count
