"""Copies keep their source's compression by default (``tuning.compression: source``): a topic
takes about the same space in every DC. Before, every copy was written uncompressed (the old
default ``none``), so an lz4 or zstd topic landed several times larger in every other DC."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aa.kafka.records import CODECS
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, batch_codecs, consume_all, create_topic, produce
from tests.helpers.mirror import running_flow, topology_flow

pytestmark = pytest.mark.integration

PER_PARTITION = 50


async def _preload(sf: str, topic: str, codecs: list[str]) -> list[Rec]:
    """``PER_PARTITION`` records in each partition ``p``, written in ``codecs[p]``."""
    sent = []
    for p, codec in enumerate(codecs):
        batch = [Rec(b"k%d" % i, b"%s-%d " % (codec.encode(), i) * 20, partition=p)
                 for i in range(PER_PARTITION)]  # fmt: skip
        await produce(sf, topic, batch, compression_type=None if codec == "none" else codec)
        sent += batch
    return sent


async def test_copies_keep_each_source_partitions_codec_by_default(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    codecs = list(CODECS)  # none, gzip, snappy, lz4, zstd: one partition each
    topic = await create_topic(sf, unique_name("keep"), partitions=len(codecs))
    sent = await _preload(sf, topic, codecs)
    settings, router = topology_flow(sf, nyc, topic)
    async with running_flow(settings, router) as (_flow, task):
        got = await consume_all(nyc, topic, count=len(sent), timeout=90, settle=0.5)
        assert not task.done()
    assert sorted((r.partition, r.key, r.value) for r in got) == sorted(
        (s.partition, s.key, s.value) for s in sent
    )
    found = await batch_codecs(nyc, topic, partitions=len(codecs), count=len(sent))
    assert found == {p: {CODECS[c]} for p, c in enumerate(codecs)}


async def test_a_fixed_codec_is_written_whatever_the_source_used(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    codecs = ["none", "lz4", "gzip"]
    topic = await create_topic(sf, unique_name("fixed"), partitions=len(codecs))
    sent = await _preload(sf, topic, codecs)
    settings, router = topology_flow(sf, nyc, topic, "tuning: {compression: zstd}\n")
    async with running_flow(settings, router) as (_flow, task):
        await consume_all(nyc, topic, count=len(sent), timeout=90)
        assert not task.done()
    found = await batch_codecs(nyc, topic, partitions=len(codecs), count=len(sent))
    assert found == {p: {CODECS["zstd"]} for p in range(len(codecs))}
