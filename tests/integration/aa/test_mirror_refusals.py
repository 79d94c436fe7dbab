"""Records the target refuses for good (issue 10, item 10): under ``on_error: dead-letter`` they
go to the dead-letter topic and the flow goes on; under ``fail`` the flow stops before them with
one message and no restart loop. Batches never exceed the target topic's max.message.bytes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import TopicPartition

from aa.admin import ClusterAdmin
from aa.config import read_yaml
from aa.kafka.records import BATCH_HEADER, record_bytes
from aa.mirror.build import build_flows
from aa.mirror.flow import DEAD_LETTER_REASON
from aa.mirror.positions import stored_offsets
from aa.mirror.settings import DEFAULT_CONFIG_EXCLUDE, FlowSettings
from aa.mirror.supervisor import Backoff, Supervisor
from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import (
    OriginOnlyRouter,
    committed,
    eos_flow,
    exact,
    running_flow,
    topic_failed,
)

pytestmark = pytest.mark.integration

Names = Callable[[str], str]
DAY_MS = 24 * 3600 * 1000
# the target keeps its own cleanup policy and limits (topic sync would copy the source's)
KEEP_TARGET = DEFAULT_CONFIG_EXCLUDE | {
    "cleanup.policy",
    "max.message.bytes",
    "message.timestamp.before.max.ms",
}


def _settings(sf: str, nyc: str, group: str, **kw: object) -> FlowSettings:
    return FlowSettings(
        "SF",
        "NYC",
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nyc},
        group_id=group,
        config_exclude=KEEP_TARGET,
        **kw,  # type: ignore[arg-type]
    )


async def _is(coro: object, want: object) -> bool:
    return await coro == want  # type: ignore[misc]


def _with_null_key_at(n: int, bad: int) -> list[Rec]:
    return [
        Rec(None if i == bad else f"k{i}".encode(), f"v{i}".encode(), partition=0) for i in range(n)
    ]


async def test_null_key_into_compacted_target_fails_its_topic_without_restarts(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("nullkey"))
    await create_topic(nyc, topic, config={"cleanup.policy": "compact"})
    await produce(sf, topic, _with_null_key_at(10, 6))
    group = unique_name("g")
    settings = _settings(sf, nyc, group, linger_ms=0)
    sup = Supervisor(
        [(settings, OriginOnlyRouter("SF", "NYC", exact(topic)))],
        Metrics(),
        backoff=Backoff(initial_s=0.2, max_s=0.5),
        shutdown_timeout_s=10,
    )
    run = asyncio.create_task(sup.run(install_signals=False))
    state = sup.states["SF->NYC"]
    try:
        failure = await topic_failed(sup.plane.controls["SF->NYC"], topic)
        await eventually(lambda: _is(committed(sf, group, topic, 1), {0: 6}), message="commit 6")
    finally:
        sup.stop()
        await asyncio.wait_for(run, 30)
    assert state.restarts == 0
    assert state.last_error is None  # the topic failed, not the flow
    assert f"{topic}/0@6" in failure.reason
    assert "compacted" in failure.reason
    copied = await consume_all(nyc, topic, count=6, settle=0.5)
    assert [r.value for r in copied] == [f"v{i}".encode() for i in range(6)]


async def test_null_key_into_compacted_target_is_dead_lettered(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("nullkey-dlq"))
    await create_topic(nyc, topic, config={"cleanup.policy": "compact"})
    await produce(sf, topic, _with_null_key_at(10, 3))
    group, dlq = unique_name("g"), unique_name("dlq")
    settings = _settings(sf, nyc, group, on_error="dead-letter", dead_letter_topic=dlq)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as (_, task):
        [dead] = await consume_all(nyc, dlq, count=1, timeout=60)
        await eventually(
            lambda: _is(committed(sf, group, topic, 1), {0: 10}), timeout=60, message="commit 10"
        )
        assert not task.done()
    copied = await consume_all(nyc, topic, count=9, settle=0.5)
    assert sorted(r.value for r in copied) == sorted(f"v{i}".encode() for i in range(10) if i != 3)
    assert dead.value == b"v3"
    assert dict(dead.headers)[DEAD_LETTER_REASON].startswith(b"invalid-record")
    assert dict(dead.headers)["aa-src"] == f"SF/{topic}/0/3".encode()


async def test_timestamp_older_than_target_accepts_is_dead_lettered(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("oldts"))
    await create_topic(nyc, topic, config={"message.timestamp.before.max.ms": str(DAY_MS)})
    now = int(time.time() * 1000)
    records = [
        Rec(
            f"k{i}".encode(),
            f"v{i}".encode(),
            partition=0,
            timestamp_ms=now - (2 * DAY_MS if i == 4 else 0),
        )
        for i in range(8)
    ]
    await produce(sf, topic, records)
    group, dlq = unique_name("g"), unique_name("dlq")
    settings = _settings(sf, nyc, group, on_error="dead-letter", dead_letter_topic=dlq)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        [dead] = await consume_all(nyc, dlq, count=1, timeout=60)
        await eventually(
            lambda: _is(committed(sf, group, topic, 1), {0: 8}), timeout=60, message="commit 8"
        )
    copied = await consume_all(nyc, topic, count=7, settle=0.5)
    assert sorted(r.value for r in copied) == sorted(f"v{i}".encode() for i in range(8) if i != 4)
    assert dead.value == b"v4"
    assert dict(dead.headers)[DEAD_LETTER_REASON].startswith(b"invalid-timestamp")


async def test_small_target_max_message_bytes_caps_batches_instead_of_dead_lettering(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """Small records into a target topic with max.message.bytes 4096: every record is copied
    in batches that fit, none is dead-lettered."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("smallcap"))
    await create_topic(nyc, topic, config={"max.message.bytes": "4096"})
    await produce(sf, topic, [Rec(f"k{i}".encode(), b"x" * 100, partition=0) for i in range(500)])
    group, dlq = unique_name("g"), unique_name("dlq")
    settings = _settings(sf, nyc, group, on_error="dead-letter", dead_letter_topic=dlq)
    metrics = Metrics()
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic)), metrics):
        copied = await consume_all(nyc, topic, count=500, timeout=60, settle=0.5)
        await eventually(
            lambda: _is(committed(sf, group, topic, 1), {0: 500}), timeout=60, message="commit"
        )
    assert sorted(r.key for r in copied) == sorted(f"k{i}".encode() for i in range(500))
    dead = metrics.dead_lettered.labels(
        source="SF", target="NYC", topic=topic, reason="record-too-large"
    )._value.get()
    assert dead == 0


async def test_eos_refused_record_stores_exactly_what_the_transaction_copied(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """Exactly-once, ``on_error: fail``: 5 copied, then 10 small + 1 over the target's
    max.message.bytes + 2. The flow stops before the big one having copied 15; the stored
    position is 15, not 5 (issue 29, item 1: it stayed at 5, and after the limit was raised the
    restart copied 10 records a second time)."""
    eos = await eos_flow(
        dc_clusters, unique_name, "eos-refused", partitions=1, commit_interval_s=0.2,
        config_exclude=KEEP_TARGET,
    )  # fmt: skip
    sf, nyc, topic = eos.sf, eos.nyc, eos.topic
    await create_topic(nyc, topic, config={"max.message.bytes": "2048"})
    await produce(
        sf, topic, [Rec(f"k{i}".encode(), f"v{i}".encode(), partition=0) for i in range(5)]
    )
    async with running_flow(eos.settings, eos.router) as (flow, _):
        await consume_all(nyc, topic, count=5, timeout=60, isolation_level="read_committed")
        later = [Rec(f"k{i}".encode(), f"v{i}".encode(), partition=0) for i in range(5, 15)]
        later.append(Rec(b"k15", b"x" * 4096, partition=0))
        later += [Rec(f"k{i}".encode(), f"v{i}".encode(), partition=0) for i in (16, 17)]
        await produce(sf, topic, later)
        failure = await topic_failed(flow.control, topic)
        assert f"{topic}/0@15" in failure.reason

    async def stored_at_15() -> bool:
        stored, _ = await stored_offsets(eos.settings)
        return stored.get(TopicPartition(topic, 0)) == 15

    await eventually(stored_at_15, timeout=30, message="stored position 15")
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        await admin.set_topic_configs(topic, {"max.message.bytes": "65536"})
    async with running_flow(eos.settings, eos.router):
        got = await consume_all(
            nyc, topic, count=18, timeout=60, isolation_level="read_committed", settle=1.0
        )
    keys = [r.key for r in got]
    assert len(keys) == 18, f"{len(keys) - len(set(keys))} copied twice"
    assert sorted(keys) == sorted(f"k{i}".encode() for i in range(18))


def _limit_flow(sf: str, nyc: str, topic: str, on_error: str) -> tuple[Any, Any]:
    """The real SF->NYC flow of ``topic`` (the topology's router and headers), the target's
    max.message.bytes its own."""
    t = read_yaml(
        f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  NYC: {{bootstrap: '{nyc}'}}\n"
        f"flows: [SF->NYC]\ntopics: ['{topic}']\non_error: {on_error}\n"
        "topic_sync: {config_exclude: [max.message.bytes]}\n"
        "heartbeats: {enabled: false}\ncheckpoints: {enabled: false}\n"
    )
    [(settings, router)] = build_flows(t, t.inbound("NYC"))
    return settings, router


def _would_take(copy: Any, value: bytes, offset: int) -> int:
    """The bytes of a single-record batch holding ``value`` with the headers ``copy`` got (its
    ``aa-src`` moved to ``offset``): what the broker checks against max.message.bytes."""
    headers = []
    for k, v in copy.headers:
        if k == "aa-src":
            v = v[: v.rfind(b"/") + 1] + b"%d" % offset
        headers.append((k, v))
    return BATCH_HEADER + record_bytes(b"k%04d" % len(value), value, headers)


LENGTHS = range(3700, 3961)
"""Value sizes around a 4096-byte max.message.bytes, one record each (key ``k<size>``)."""


async def test_records_that_fit_with_aa_headers_are_copied_not_dead_lettered(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A short topic into a target with max.message.bytes 4096, values from 3,700 to 3,960
    bytes: every record whose copy (with aa's own headers) fits is copied, only the others are
    dead-lettered (issue 29, item 4: a fixed 256-byte allowance refused records that fit)."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("fit"))
    await create_topic(nyc, topic, config={"max.message.bytes": "4096"})
    await produce(sf, topic, [Rec(b"k%04d" % n, b"x" * n, partition=0) for n in LENGTHS])
    settings, router = _limit_flow(sf, nyc, topic, "dead-letter")
    async with running_flow(settings, router) as (_, task):
        await eventually(
            lambda: _is(committed(sf, settings.group_id, topic, 1), {0: len(LENGTHS)}),
            timeout=90,
            message="every record copied or dead-lettered",
        )
        assert not task.done(), task.exception()
    copied = await consume_all(nyc, topic, count=1, settle=1.0)
    dead = await consume_all(nyc, settings.dead_letter_topic, count=1, settle=1.0)
    assert len(copied) + len(dead) == len(LENGTHS)
    assert sorted(len(r.value) for r in copied) == list(LENGTHS)[: len(copied)]
    last = max(copied, key=lambda r: len(r.value))
    assert _would_take(last, last.value + b"x", len(copied)) > 4096  # the next did not fit


async def test_a_record_over_the_limit_only_with_aa_headers_fails_its_topic_before_it(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """A 120-character topic (``aa-src`` names it) into a target with max.message.bytes 4096,
    ``on_error: fail``: the flow copies every record that fits and stops for good before the
    first that does not, its offset the committed one — the screen's refusal, not the broker's
    (issue 29, item 4: the copy was 74 bytes over, the broker refused it and the flow restarted
    blaming the target's config)."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("long").ljust(120, "x")[:120])
    await create_topic(nyc, topic, config={"max.message.bytes": "4096"})
    await produce(sf, topic, [Rec(b"k%04d" % n, b"x" * n, partition=0) for n in LENGTHS])
    settings, router = _limit_flow(sf, nyc, topic, "fail")
    async with running_flow(settings, router) as (flow, _):
        failure = await topic_failed(flow.control, topic, timeout=90)
        copied = await consume_all(nyc, topic, count=1, settle=1.0)
        assert f"{topic}/0@{len(copied)}" in failure.reason
        assert "too large" in failure.reason
        await eventually(
            lambda: _is(committed(sf, settings.group_id, topic, 1), {0: len(copied)}),
            message="committed up to the refused record",
        )
    assert sorted(len(r.value) for r in copied) == list(LENGTHS)[: len(copied)]
    last = max(copied, key=lambda r: len(r.value))
    assert _would_take(last, last.value + b"x", len(copied)) > 4096


async def test_eos_record_over_the_limit_is_dead_lettered_and_the_rest_copied_once(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """Exactly-once, ``on_error: dead-letter``: one 5,000-byte record among ten into a target
    topic with max.message.bytes 2,000. The reference goes to the dead-letter topic inside the
    transaction and the nine others are copied once (a hang in ``target_waiting for copies``
    was seen twice here)."""
    dlq = unique_name("dlq")
    eos = await eos_flow(
        dc_clusters, unique_name, "eos-dlq", partitions=1, commit_interval_s=0.2,
        config_exclude=KEEP_TARGET, on_error="dead-letter", dead_letter_topic=dlq,
    )  # fmt: skip
    sf, nyc, topic = eos.sf, eos.nyc, eos.topic
    await create_topic(nyc, topic, config={"max.message.bytes": "2000"})
    records = [
        Rec(f"k{i}".encode(), b"x" * (5000 if i == 6 else 10), partition=0) for i in range(10)
    ]
    await produce(sf, topic, records)
    async with running_flow(eos.settings, eos.router) as (_, task):
        got = await consume_all(
            nyc, topic, count=9, timeout=90, isolation_level="read_committed", settle=1.0
        )
        [dead] = await consume_all(nyc, dlq, count=1, timeout=60, isolation_level="read_committed")
        stored = await eventually(
            lambda: _stored_at(eos.settings, topic, 10), timeout=60, message="position 10 stored"
        )
        assert stored
        assert not task.done()
    assert sorted(r.key for r in got) == sorted(f"k{i}".encode() for i in range(10) if i != 6)
    assert dict(dead.headers)[DEAD_LETTER_REASON].startswith(b"record-too-large")


async def _stored_at(settings: FlowSettings, topic: str, want: int) -> bool:
    stored, _ = await stored_offsets(settings)
    return stored.get(TopicPartition(topic, 0)) == want
