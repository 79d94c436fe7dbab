"""A damaged source log (a disk fault, a broker bug): a record batch that fails its CRC check.

Before, aiokafka's CorruptRecordException failed the flow, the supervisor restarted it, the
restart fetched the same batch again, forever (every 60 s at the end), and nothing was copied,
not even the records before the damaged batch. Now the records before it are copied and
committed, the batch is read once more (a fault in transit would not repeat), and the flow stops
for good before it with one message naming the partition and offset."""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from aa.config import read_yaml
from aa.lag import LagReader
from aa.mirror.build import flow_settings
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import OriginOnlyRouter, committed, exact, supervised

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


def _damage_batch(segment: Path, index: int) -> int:
    """Flip the last byte of the ``index``-th record batch of ``segment`` (inside what its CRC
    covers), in place: the broker serves fetches from the page cache, so the next fetch carries
    the damage. Returns that batch's base offset."""
    data = bytearray(segment.read_bytes())
    pos = 0
    for _ in range(index):
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    base, length = struct.unpack_from(">qi", data, pos)
    data[pos + 12 + length - 1] ^= 0xFF
    with segment.open("r+b") as f:
        f.seek(pos + 12 + length - 1)
        f.write(bytes([data[pos + 12 + length - 1]]))
    return int(base)


async def test_corrupt_source_batch_copies_what_precedes_it_and_stops_the_flow_once(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf_dc = dc_clusters["SF"]
    if sf_dc.data_dir is None:
        pytest.skip("needs the local brokers' log directories")
    sf, nyc = sf_dc.bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("corrupt"), partitions=1)
    for b in range(10):  # ten batches of ten records
        await produce(sf, topic, [Rec(None, f"{b}-{i}".encode(), partition=0) for i in range(10)])
    [segment] = (sf_dc.data_dir / f"{topic}-0").glob("*.log")
    damaged = _damage_batch(segment, 5)
    assert damaged == 50
    tag = uuid.uuid4().hex[:6]
    a, b = f"S{tag}", f"N{tag}"  # a group of its own: aa.mirror.<a>.<b>
    topology = read_yaml(
        f"datacenters: {{{a}: '{sf}', {b}: '{nyc}'}}\nflows: ['{a}->{b}']\n"
        f"topics: {{include: ['{topic}']}}\nheartbeats: {{enabled: false}}\n"
    )
    flow = topology.flow(f"{a}->{b}")
    settings = dataclasses.replace(flow_settings(topology, flow), commit_interval_s=0.2)
    group = settings.group_id
    async with supervised(settings, OriginOnlyRouter(a, b, exact(topic))) as supervisor:
        state = supervisor.states[settings.name]
        await eventually(
            lambda: state.state == "failed",
            timeout=60,
            message=f"the flow stops for good (state {state.state}, {state.last_error})",
        )
    assert state.restarts == 0, state.last_error
    assert f"{topic}/0@{damaged}" in (state.last_error or ""), state.last_error
    assert "CRC" in (state.last_error or "")
    copied = await consume_all(nyc, topic, count=damaged, timeout=60, settle=2.0)
    assert sorted(r.value for r in copied) == sorted(
        f"{b}-{i}".encode() for b in range(5) for i in range(10)
    )
    assert await committed(sf, group, topic, 1) == {0: damaged}
    # the lag export reads the oldest record not copied: the damaged one. Its age is unknown;
    # the count is still exported (before, every lag read failed on the damaged batch)
    reader = LagReader(topology)
    try:
        [lag] = await reader.flow_lag(flow)
    finally:
        await reader.close()
    assert (lag.records, lag.seconds) == (50, None)
