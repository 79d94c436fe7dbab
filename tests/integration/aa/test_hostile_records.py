"""Hostile record contents on real brokers (issue 11 section 4): non-UTF-8 keys and header
values, zero-length and null values, and a value near the broker's default size limit are
copied byte for byte — the mirror never interprets keys or values."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer

from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.kcat import kcat_consume, kcat_produce
from tests.helpers.mirror import committed, running_flow, topology_flow

pytestmark = pytest.mark.integration

NEAR_LIMIT = 1_000_000
"""Bytes of the largest value: under the default max.message.bytes (1048588) with its batch."""


async def test_odd_keys_and_values_are_copied_byte_for_byte(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("odd"), partitions=1)
    sent = [
        Rec(b"\xff\xfe\x00k", b"\x80\x81", [("app", b"\xff")], partition=0),  # not UTF-8
        Rec(b"", b"", partition=0),  # zero-length key and value
        Rec(b"tombstone", None, partition=0),  # null value
        Rec(None, b"no key", partition=0),  # null key
        Rec(b"big", bytes(range(256)) * (NEAR_LIMIT // 256), partition=0),
    ]
    await produce(sf, topic, sent, max_request_size=2 * NEAR_LIMIT)
    settings, router = topology_flow(sf, nyc, topic, "offset_sync: {enabled: false}\n")
    async with running_flow(settings, router) as (_flow, task):
        got = await consume_all(nyc, topic, count=len(sent), timeout=90, settle=0.5)
        assert not task.done()
    assert [(r.key, r.value) for r in got] == [(s.key, s.value) for s in sent]
    assert ("app", b"\xff") in list(got[0].headers)


async def test_source_batches_in_every_compression_are_copied_and_the_target_compresses_too(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """Without the codecs, a flow restarted forever on the first lz4, snappy or zstd batch of
    its source (what Java producers often write) and copied nothing of the topic."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("codecs"), partitions=1)
    sent = []
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        batch = [Rec(codec.encode(), f"{codec}{i}".encode() * 20, partition=0) for i in range(20)]
        await produce(sf, topic, batch, compression_type=codec)
        sent += batch
    settings, router = topology_flow(sf, nyc, topic, "tuning: {compression: zstd}\n")
    async with running_flow(settings, router) as (_flow, task):
        got = await consume_all(nyc, topic, count=len(sent), timeout=60, settle=0.5)
        assert not task.done()
    assert [(r.key, r.value) for r in got] == [(s.key, s.value) for s in sent]


async def test_aborted_source_transactions_are_not_copied_and_the_commit_reaches_the_end(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    # A transactional application in SF: its aborted records stay in SF's log between the
    # committed ones, and every transaction ends with a control record. The flow's own fetch
    # path (lean records, batch restamping) must skip the aborted ones as read_committed does,
    # and its commit must pass the last control record (else lag never reaches 0).
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("txn"), partitions=1)
    producer = AIOKafkaProducer(bootstrap_servers=sf, transactional_id=unique_name("tx"))
    await producer.start()
    try:
        for n in range(5):
            await producer.begin_transaction()
            for i in range(5):
                await producer.send(topic, key=b"k", value=f"t{n}-{i}".encode(), partition=0)
            await producer.flush()
            await (producer.abort_transaction() if n % 2 else producer.commit_transaction())
    finally:
        await producer.stop()
    settings, router = topology_flow(sf, nyc, topic)
    async with running_flow(settings, router) as (_flow, task):
        got = await consume_all(nyc, topic, count=15, timeout=60, settle=1.0)
        await eventually(
            lambda: _committed_is(sf, settings.group_id or "", topic, 30),
            timeout=30,
            message="the commit passes the last transaction marker (offset 30)",
        )
        assert not task.done()
    assert [r.value for r in got] == [f"t{n}-{i}".encode() for n in (0, 2, 4) for i in range(5)]


async def _committed_is(bootstrap: str, group: str, topic: str, want: int) -> bool:
    return (await committed(bootstrap, group, topic, 1)) == {0: want}


async def test_header_names_a_librdkafka_client_writes_as_bytes_are_copied_byte_for_byte(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """kcat (librdkafka) writes header names that are not UTF-8; aiokafka cannot decode them.
    Every record of the topic — before, in and after the odd batches, uncompressed and lz4 —
    and of another topic of the same flow is copied, names byte for byte (issue 29, item 2:
    0 of 6 copied, the flow failed after 5 crashes, dead-letter on or not)."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("bytes-names"), partitions=1)
    other = await create_topic(sf, unique_name("bytes-names-other"), partitions=1)
    odd = ((b"\xff\xfekey", b"v\xff"), (b"ok", b"1"))
    await kcat_produce(sf, topic, [b"a0", b"a1", b"a2"], key=b"k")
    await kcat_produce(sf, topic, [b"b0"], key=b"k", headers=odd)
    await kcat_produce(sf, topic, [b"c0", b"c1"], key=b"k")
    await kcat_produce(sf, topic, [b"d0", b"d1"], key=b"k", headers=odd, compression="lz4")
    await kcat_produce(sf, other, [b"o0", b"o1", b"o2"], key=b"k")
    settings, router = topology_flow(sf, nyc, f"^({topic}|{other})$", "on_error: dead-letter\n")
    async with running_flow(settings, router) as (_flow, task):
        got = await kcat_consume(nyc, topic, count=8, timeout=90)
        others = await kcat_consume(nyc, other, count=3, timeout=60)
        assert not task.done()
    assert [r.value for r in got] == [b"a0", b"a1", b"a2", b"b0", b"c0", b"c1", b"d0", b"d1"]
    assert [r.value for r in others] == [b"o0", b"o1", b"o2"]
    for r in got:
        app = tuple(h for h in r.headers if not h[0].startswith(b"aa-"))
        assert app == (odd if r.value[:1] in b"bd" else ()), r
