"""The committed-lag read's consumer (the exporter runs it every ``lag_interval_s``)."""

from __future__ import annotations

import pytest

from aa.lag import timestamp_reader
from aa.mirror.settings import FlowSettings

pytestmark = pytest.mark.unit


async def test_the_lag_read_fetches_one_batch_per_partition_for_its_timestamps() -> None:
    # it wants one record's timestamp per partition behind; with the consumer's default
    # (1 MiB per partition) each read decoded whole fetches: 3.7% of a W3 process's samples
    settings = FlowSettings("A", "B", {"bootstrap_servers": "-"}, {"bootstrap_servers": "-"}, "g")
    consumer = timestamp_reader(settings)
    assert consumer._max_partition_fetch_bytes == 1
