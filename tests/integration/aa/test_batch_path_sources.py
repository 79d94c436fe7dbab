"""What Java producers write goes through the batch path (issue 31 items 2 and 3): compressed
and transactional source batches are re-encoded whole (``aa_batch_path_batches_total``), in
at-least-once and exactly-once flows, and the copies are right: the committed records only,
in order, with their own headers and aa's provenance. Before, every such batch (and every
batch of an exactly-once flow) was decoded record by record: the counter did not exist, and
with it counted on that code it stays 0."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer

from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import consume_all, create_topic
from tests.helpers.mirror import running_flow, topology_flow

pytestmark = pytest.mark.integration

PARTITIONS = 2


async def _transactions(
    sf: str, topic: str, app: str, codec: str | None
) -> list[tuple[int, bytes]]:
    """Three transactions in ``codec``, the second aborted; what a read_committed consumer of
    ``topic`` gets, as (partition, value), in order per partition."""
    producer = AIOKafkaProducer(
        bootstrap_servers=sf, transactional_id=app, compression_type=codec, linger_ms=50
    )
    await producer.start()
    committed: list[tuple[int, bytes]] = []
    try:
        for n, outcome in enumerate(["commit", "abort", "commit"]):
            await producer.begin_transaction()
            sent = []
            for i in range(60):
                p, value = i % PARTITIONS, b"%s-%d-%d " % (outcome.encode(), n, i) * 8
                sent.append(
                    await producer.send(
                        topic, value, key=b"k%d" % i, partition=p, headers=[("app", b"%d" % i)]
                    )
                )
                if outcome == "commit":
                    committed.append((p, value))
            for fut in sent:
                await fut
            if outcome == "commit":
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()
    return committed


def _batch_path_batches(metrics: Metrics, source: str, target: str, topic: str) -> float:
    counter = metrics.batch_path.labels(source=source, target=target, topic=topic)
    return float(counter._value.get())


@pytest.mark.parametrize(
    ("codec", "delivery"),
    [("lz4", "at-least-once"), ("zstd", "exactly-once"), (None, "exactly-once")],
)
async def test_transactional_sources_take_the_batch_path_and_copy_the_committed_records(
    dc_clusters: dict[str, DcCluster],
    unique_name: Callable[[str], str],
    codec: str | None,
    delivery: str,
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    tag = uuid.uuid4().hex[:6]
    a, b = f"S{tag}", f"N{tag}"  # the transactional id is per flow, and tests share brokers
    topic = await create_topic(sf, unique_name("txbatch"), partitions=PARTITIONS)
    committed = await _transactions(sf, topic, unique_name("app"), codec)
    extra = f"delivery: {delivery}\n"
    if delivery == "exactly-once":
        extra += "tuning: {commit_interval_s: 0.2}\n"
    settings, router = topology_flow(sf, nyc, topic, extra, names=(a, b))
    metrics = Metrics()
    async with running_flow(settings, router, metrics) as (_flow, task):
        got = await consume_all(
            nyc, topic, count=len(committed), timeout=90, settle=1.0,
            isolation_level="read_committed",
        )  # fmt: skip
        assert not task.done()
    # the committed records only (none of the aborted transaction), once each, in order
    assert [(r.partition, r.value) for r in sorted(got, key=lambda r: (r.partition, r.offset))] == [
        pair for p in range(PARTITIONS) for pair in committed if pair[0] == p
    ]
    offsets: dict[int, list[int]] = {}
    for r in sorted(got, key=lambda r: (r.partition, r.offset)):
        headers = dict(r.headers)
        assert r.key == b"k" + headers["app"]
        assert headers["aa-origin"] == a.encode()
        src = headers["aa-src"].decode().rsplit("/", 1)
        assert src[0] == f"{a}/{topic}/{r.partition}"
        offsets.setdefault(r.partition, []).append(int(src[1]))
    for p, seen in offsets.items():
        # source offsets rise; the aborted transaction's records and the markers are skipped
        assert seen == sorted(set(seen)), p
        assert seen[-1] - seen[0] + 1 > len(seen), "no gap: the aborted records were copied?"
    # each committed transaction wrote at least one batch per partition: all re-encoded whole
    taken = _batch_path_batches(metrics, a, b, topic)
    assert 2 * PARTITIONS <= taken <= len(committed)
