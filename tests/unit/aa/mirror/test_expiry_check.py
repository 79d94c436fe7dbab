"""ExpiryCheck (pure logic, fake clients): offsets the source deleted before the flow read them
are reported at a partition's first batch and when the log start overtakes a running flow."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import TopicPartition
from structlog.testing import capture_logs

from aa.mirror.expiry import ExpiryCheck
from aa.observe.metrics import Metrics
from tests.helpers.mirror import sf_to_nyc, stage_context

pytestmark = pytest.mark.unit
TP = TopicPartition("orders", 0)


class _Rec:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class _Consumer:
    def __init__(self) -> None:
        self.start = 0
        self.asked = 0

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        self.asked += 1
        return dict.fromkeys(tps, self.start)


class _Delivery:
    def __init__(self, resume: int | None) -> None:
        self.resume = resume

    async def resume_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        return dict.fromkeys(tps, self.resume)


def _batch(first: int, n: int) -> dict[TopicPartition, list[Any]]:
    return {TP: [_Rec(o) for o in range(first, first + n)]}


def _check(consumer: _Consumer, resume: int | None) -> tuple[ExpiryCheck, Metrics]:
    metrics = Metrics()
    settings = sf_to_nyc("sf:1", "nyc:1", "g")
    delivery = _Delivery(resume)
    ctx = stage_context(settings, consumer=consumer, delivery=delivery, log=_Log(), metrics=metrics)  # type: ignore[arg-type]
    return ExpiryCheck(ctx), metrics


class _Log:
    def warning(self, event: str, **kw: Any) -> None:
        from aa.logs import get_logger

        get_logger("test").warning(event, **kw)


async def test_log_start_overtaking_a_running_flow_is_reported_once() -> None:
    consumer = _Consumer()
    check, metrics = _check(consumer, resume=0)
    with capture_logs() as logs:
        await check.check(_batch(0, 10))  # first batch: resumes at 0, log start 0
        consumer.start = 40  # retention deleted 10..39 before the flow fetched them
        await check.check(_batch(40, 10))  # the consumer reset to the log start
        await check.check(_batch(50, 10))  # contiguous: nothing to ask
    gaps = [(e["first"], e["next"]) for e in logs if e["event"] == "records_expired_before_copy"]
    assert gaps == [(10, 40)], logs
    assert 'aa_records_expired_total{source="SF",target="NYC",topic="orders"} 30.0' in (
        metrics.render().decode()
    )
    assert consumer.asked == 2  # the first batch and the jump, not every batch


async def test_an_offset_gap_above_the_log_start_is_not_expiry() -> None:
    consumer = _Consumer()
    check, _ = _check(consumer, resume=0)
    with capture_logs() as logs:
        await check.check(_batch(0, 10))
        await check.check(_batch(12, 10))  # a transaction marker, a compacted record
    assert not [e for e in logs if e["event"] == "records_expired_before_copy"]
