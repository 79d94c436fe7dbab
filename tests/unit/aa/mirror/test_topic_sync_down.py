"""A periodic topic sync that fails because a DC is down logs one line, not a 30-line
traceback every interval; a crash in it still logs its traceback (the flow copies on)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.errors import NodeNotReadyError
from structlog.testing import capture_logs

from aa.logs import get_logger
from aa.mirror.placement import Placement
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from tests.helpers.mirror import stage_context

pytestmark = pytest.mark.unit


class _FailingSync:
    def __init__(self, error: Exception, stop: asyncio.Event) -> None:
        self.error, self.stop, self.partitions = error, stop, {}

    async def sync(self, only: str | None = None) -> None:
        self.stop.set()  # one periodic pass is enough
        raise self.error


@pytest.mark.parametrize(
    ("error", "traceback"),
    [(NodeNotReadyError("node 1 not ready"), False), (TypeError("a defect"), True)],
    ids=["dc-down", "crash"],
)
async def test_topic_sync_failing_on_a_down_dc_logs_one_line(
    error: Exception, traceback: bool
) -> None:
    settings = FlowSettings("SF", "NYC", {}, {}, group_id="g", topic_sync_interval_s=0.001)
    stop = asyncio.Event()
    log = get_logger("test")
    placement = Placement(stage_context(settings, log=log), _FailingSync(error, stop))  # type: ignore[arg-type]
    with capture_logs() as logs:
        await asyncio.wait_for(placement.sync_loop(stop, Metrics()), 30)
    [failed] = [e for e in logs if e["event"] == "topic_sync_failed"]
    assert ("exc_info" in failed) is traceback
    assert placement.topic_sync_error is not None
