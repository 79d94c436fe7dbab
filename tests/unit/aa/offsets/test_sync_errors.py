"""The real error behind "writing offset syncs failed" (issue 10 item 12): the writer keeps and
logs the broker's error (e.g. NotLeaderForPartition), and the flow's error names it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import NotLeaderForPartitionError
from structlog.testing import capture_logs

from aa.offsets.store import OffsetSyncStore
from aa.offsets.sync import OffsetSync
from aa.offsets.writer import OffsetSyncWriter

pytestmark = pytest.mark.unit


class _RefusingProducer:
    """Stands in for aiokafka's producer: every send's future fails with ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def send(
        self, topic: str, value: bytes, key: bytes, partition: int | None = None
    ) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_exception(self.error)
        return fut


class _Rec:
    def __init__(self, offset: int) -> None:
        self.offset = offset


async def test_failed_offset_sync_write_keeps_and_logs_the_broker_error() -> None:
    writer = OffsetSyncWriter(_RefusingProducer(NotLeaderForPartitionError()), "aa.syncs")
    tp = TopicPartition("users", 0)
    with capture_logs() as logs:
        await writer.copied(tp, "users", [_Rec(0), _Rec(1)], 0)
        await writer.flush()  # runs are written at breaks, commits and drains
        for _ in range(100):  # the done-callbacks run on the next loop iterations
            if writer.failed:
                break
            await asyncio.sleep(0)
    assert writer.failed >= 1
    assert isinstance(writer.last_error, NotLeaderForPartitionError)
    failed = [e for e in logs if e["event"] == "offset_sync_write_failed"]
    assert failed
    assert "NotLeaderForPartition" in failed[0]["error"]
    assert failed[0]["topic"] == "aa.syncs"


class _SyncTopic:
    """Stands in for the sync topic's reader: hands over its records in one batch."""

    topic = "aa.offset-syncs.A.internal"

    def __init__(self, values: list[bytes]) -> None:
        self.records = [_Value(i, v) for i, v in enumerate(values)]

    async def catch_up_each(self, handle: Any, timeout: float = 30.0) -> int:
        handle(self.records)
        return len(self.records)


class _Value:
    def __init__(self, offset: int, value: bytes) -> None:
        self.offset, self.value = offset, value


async def test_a_record_in_the_sync_topic_that_is_not_a_sync_is_skipped_with_a_warning() -> None:
    """Checkpoints and exactly-once resume read the sync topic: one foreign record there must
    not fail every read. Skipping it is safe: a missing sync only makes an answer behind."""
    before = OffsetSync("users", 0, "users", 0, 0, 9, 100)
    after = OffsetSync("users", 0, "users", 10, 10, 19, 110)
    store = OffsetSyncStore("A", "B")
    with capture_logs() as logs:
        await store.catch_up(_SyncTopic([before.encode(), b"not a sync", after.encode()]))  # type: ignore[arg-type]
    assert (store.unreadable, store.copied_ends()) == (1, {("users", 0): 20})
    pos = store.translate("users", 0, 15)
    assert (pos.offset, pos.exactness) == (115, "exact")
    warned = [e for e in logs if e["event"] == "offset_syncs_unreadable"]
    assert len(warned) == 1, logs
    assert "offset 1" in warned[0]["last"]
