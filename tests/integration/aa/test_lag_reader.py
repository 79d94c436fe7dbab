"""The lag exporter reads every flow's lag every ``metrics.lag_interval_s``: it keeps each
flow's source clients open between reads instead of opening three connections per read, and
starts from fresh ones after a read that failed."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from aa import lag as lag_module
from aa.config import read_yaml
from aa.lag import LagClients, LagReader
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, create_topic, produce

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


async def test_lag_reads_keep_one_set_of_source_clients_until_a_read_fails(
    dc_clusters: dict[str, DcCluster], unique_name: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("lagread"), partitions=2)
    await produce(sf, topic, [Rec(None, b"v%d" % i, partition=i % 2) for i in range(10)])
    tag = uuid.uuid4().hex[:6]
    a, b = f"S{tag}", f"N{tag}"
    topology = read_yaml(
        f"datacenters: {{{a}: '{sf}', {b}: '{nyc}'}}\nflows: ['{a}->{b}']\n"
        f"topics: {{include: ['{topic}']}}\nheartbeats: {{enabled: false}}\n"
    )
    flow = topology.flow(f"{a}->{b}")
    opened: list[LagClients] = []
    real_open = LagClients._open

    async def counting_open(self: LagClients) -> None:
        opened.append(self)
        await real_open(self)

    monkeypatch.setattr(LagClients, "_open", counting_open)
    reader = LagReader(topology)
    try:
        first = await reader.flow_lag(flow)
        assert sum(p.records for p in first) == 10
        assert all(p.seconds is not None for p in first)
        await produce(sf, topic, [Rec(None, b"w%d" % i, partition=i % 2) for i in range(5)])
        for _ in range(3):
            again = await reader.flow_lag(flow)
            assert sum(p.records for p in again) == 15  # each read asks the source anew
        assert len(opened) == 1, "one set of clients for every read of the flow"
        assert opened[0].consumer.assignment() == set(), "a kept consumer fetches nothing"

        def broken(*_: object) -> None:
            raise RuntimeError("read broke")

        with monkeypatch.context() as m:
            m.setattr(lag_module, "_timestamps", broken)
            with pytest.raises(RuntimeError, match="read broke"):
                await reader.flow_lag(flow)
        assert not opened[0].is_open, "the failed read's clients are closed"
        assert sum(p.records for p in await reader.flow_lag(flow)) == 15
        assert len(opened) == 2, "the read after a failure opens fresh clients"
    finally:
        await reader.close()
    assert not opened[-1].is_open
