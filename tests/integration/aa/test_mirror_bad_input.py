"""Bad input to a flow: it stops cleanly or dead-letters, never skips silently, and never
commits source offsets past a record the target did not take."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import AsyncIterator, Callable

import orjson
import pytest

from aa.admin import ClusterAdmin
from aa.config import read_yaml
from aa.mirror.build import build_flows
from aa.mirror.flow import DEAD_LETTER_REASON
from aa.mirror.settings import DEFAULT_CONFIG_EXCLUDE, FlowSettings
from aa.mirror.supervisor import Backoff, Supervisor
from aa.observe.metrics import Metrics
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, delete_topic, eventually, produce
from tests.helpers.mirror import (
    OriginOnlyRouter,
    committed,
    exact,
    running_flow,
    supervised,
    topic_failed,
)

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


def _settings(sf: str, nyc: str, group: str, **kw: object) -> FlowSettings:
    return FlowSettings(
        "SF", "NYC", {"bootstrap_servers": sf}, {"bootstrap_servers": nyc}, group_id=group, **kw
    )  # type: ignore[arg-type]


async def _setup(
    dc_clusters: dict[str, DcCluster], unique_name: Names, records: list[Rec]
) -> tuple[str, str, str, str]:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("bad"), partitions=1)
    await produce(sf, topic, records)
    return sf, nyc, topic, unique_name("g")


def _recs(n: int, bad: dict[int, list[tuple[str, bytes]]]) -> list[Rec]:
    return [Rec(f"k{i}".encode(), f"v{i}".encode(), bad.get(i, []), partition=0) for i in range(n)]


@pytest.mark.parametrize(
    "bad_header",
    [
        [("aa-origin", b"\xff\xfeNYC")],  # not UTF-8
        [("aa-origin", b"SF"), ("aa-src", b"x")],  # wrong shape
    ],
)
async def test_malformed_headers_fail_the_topic_before_the_record(
    dc_clusters: dict[str, DcCluster],
    unique_name: Names,
    bad_header: list[tuple[str, bytes]],
) -> None:
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, _recs(10, {5: bad_header}))
    async with running_flow(
        _settings(sf, nyc, group), OriginOnlyRouter("SF", "NYC", exact(topic))
    ) as (flow, task):
        failure = await topic_failed(flow.control, topic)
        assert re.search(r"malformed provenance headers at .*/0@5", failure.reason)
        await eventually(lambda: _is(committed(sf, group, topic, 1), {0: 5}), message="commit 5")
        assert not task.done()  # the topic failed, not the flow
    copied = await consume_all(nyc, topic, count=5)
    assert [r.value for r in copied] == [f"v{i}".encode() for i in range(5)]


async def test_malformed_headers_go_to_the_dead_letter_topic(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    bad = [("aa-origin", b"\xff")]
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, _recs(10, {3: bad}))
    dlq = unique_name("dlq")
    settings = _settings(sf, nyc, group, on_error="dead-letter", dead_letter_topic=dlq)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as (_flow, _):
        copied = await consume_all(nyc, topic, count=9, settle=0.5)
        [dead] = await consume_all(nyc, dlq, count=1)
        await eventually(lambda: committed(sf, group, topic, 1), message="commit")
        await eventually(
            lambda: _is(committed(sf, group, topic, 1), {0: 10}), message="offset 10 committed"
        )
    assert len(copied) == 9
    assert dead.value == b"v3"
    headers = dict(dead.headers)
    assert headers[DEAD_LETTER_REASON].startswith(b"malformed-headers")
    assert headers["aa-src"] == f"SF/{topic}/0/3".encode()


async def _is(coro: object, want: object) -> bool:
    return await coro == want  # type: ignore[misc]


async def test_record_larger_than_target_limit_fails_its_topic(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    records = _recs(6, {})
    records[4] = Rec(b"big", b"x" * 8000, partition=0)
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, records)
    await create_topic(nyc, topic, partitions=1, config={"max.message.bytes": "2048"})
    exclude = DEFAULT_CONFIG_EXCLUDE | {"max.message.bytes"}
    settings = _settings(sf, nyc, group, config_exclude=exclude, linger_ms=0)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as (flow, _):
        failure = await topic_failed(flow.control, topic)
        assert re.search(r"larger than .*max.message.bytes", failure.reason)
        assert failure.offset == 4
        offsets = await committed(sf, group, topic, 1)
    assert offsets[0] is None or offsets[0] <= 4


async def test_record_larger_than_target_limit_is_dead_lettered_by_reference(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    records = _recs(6, {})
    records[4] = Rec(b"big", b"x" * 8000, partition=0)
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, records)
    await create_topic(nyc, topic, partitions=1, config={"max.message.bytes": "2048"})
    dlq = unique_name("dlq")
    settings = _settings(
        sf,
        nyc,
        group,
        on_error="dead-letter",
        dead_letter_topic=dlq,
        config_exclude=DEFAULT_CONFIG_EXCLUDE | {"max.message.bytes"},
    )
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        copied = await consume_all(nyc, topic, count=5, settle=0.5)
        [dead] = await consume_all(nyc, dlq, count=1)
        await eventually(lambda: _is(committed(sf, group, topic, 1), {0: 6}), message="commit 6")
    assert sorted(r.value for r in copied) == sorted(f"v{i}".encode() for i in (0, 1, 2, 3, 5))
    assert dead.key == b"big"
    ref = orjson.loads(dead.value)  # a reference: the value itself cannot fit
    assert ref["src"] == f"SF/{topic}/0/4"
    assert ref["bytes"] >= 8000
    assert dict(dead.headers)["aa-src"] == f"SF/{topic}/0/4".encode()
    assert dict(dead.headers)[DEAD_LETTER_REASON].startswith(b"record-too-large")


@contextlib.asynccontextmanager
async def _limit_lowered_mid_run(
    dc_clusters: dict[str, DcCluster], unique_name: Names, **kw: object
) -> AsyncIterator[tuple[Supervisor, str, str, str, str]]:
    """SF->NYC under a supervisor; once NYC's limits are read (1 MiB), an operator lowers them
    to 2048 bytes before the next topic sync, and SF gets one batch of six records whose
    fourth (offset 4) is 8000 bytes: NYC refuses the batch whole, so the flow cannot tell
    which record it refused."""
    sf, nyc, topic, group = await _setup(
        dc_clusters, unique_name, [Rec(b"k", b"first", partition=0)]
    )
    await create_topic(nyc, topic, partitions=1, config={"max.message.bytes": "1048576"})
    exclude = DEFAULT_CONFIG_EXCLUDE | {"max.message.bytes"}
    settings = _settings(sf, nyc, group, config_exclude=exclude, topic_sync_interval_s=3600, **kw)
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        await consume_all(nyc, topic, count=1, timeout=60)  # NYC's limits are read
        async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
            await admin.set_topic_configs(topic, {"max.message.bytes": "2048"})
        records = _recs(6, {})
        records[3] = Rec(b"big", b"x" * 8000, partition=0)
        await produce(sf, topic, records)
        yield sup, sf, nyc, topic, group


async def test_target_limit_lowered_mid_run_dead_letters_the_record_of_a_refused_batch(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    # Dead-letter mode must dead-letter the refused batch's big record (not stop for good)
    # and copy the rest, in order, once.
    dlq = unique_name("dlq")
    scenario = _limit_lowered_mid_run(
        dc_clusters, unique_name, on_error="dead-letter", dead_letter_topic=dlq
    )
    async with scenario as (sup, sf, nyc, topic, group):
        copied = await consume_all(nyc, topic, count=6, timeout=60, settle=1.0)
        [dead] = await consume_all(nyc, dlq, count=1, timeout=30)
        await eventually(lambda: _is(committed(sf, group, topic, 1), {0: 7}), message="commit 7")
        restarts = sup.states["SF->NYC"].restarts
    assert [r.value for r in copied] == [b"first"] + [f"v{i}".encode() for i in (0, 1, 2, 4, 5)]
    assert dead.key == b"big"
    assert dict(dead.headers)[DEAD_LETTER_REASON].startswith(b"record-too-large")
    assert restarts <= 1  # screened again once, never a restart loop


async def test_target_limit_lowered_mid_run_fails_the_topic_before_the_record_not_the_batch(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    # on_error: fail. The refused batch's first record is not what NYC refuses: the flow must
    # copy the records before the big one and fail its topic before it, naming it and the limit.
    async with _limit_lowered_mid_run(dc_clusters, unique_name) as (sup, sf, nyc, topic, group):
        state = sup.states["SF->NYC"]
        failure = await topic_failed(sup.plane.controls["SF->NYC"], topic)
        copied = await consume_all(nyc, topic, count=4, timeout=30, settle=1.0)
        offsets = await committed(sf, group, topic, 1)
    assert [r.value for r in copied] == [b"first", b"v0", b"v1", b"v2"]
    assert f"{topic}/0@4" in failure.reason
    assert "larger than" in failure.reason
    assert offsets[0] is not None
    assert offsets[0] <= 4
    assert state.restarts <= 1


async def test_a_record_the_broker_refuses_alone_after_the_limit_was_lowered_fails_its_topic(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    # on_error: fail. A record sent alone that NYC refuses (its limit lowered after the flow
    # read it): the flow stopped for good ("no retry can fix this"); now its topic fails, its
    # commit stays before the record, and raising the limit resumes it with nothing lost.
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, [Rec(b"k", b"first")])
    await create_topic(nyc, topic, partitions=1, config={"max.message.bytes": "1048576"})
    exclude = DEFAULT_CONFIG_EXCLUDE | {"max.message.bytes"}
    settings = _settings(sf, nyc, group, config_exclude=exclude, topic_sync_interval_s=3600)
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        control = sup.plane.controls["SF->NYC"]
        control.retry_s, control.retry_max_s = 0.5, 2.0  # tried again often, for the test
        await consume_all(nyc, topic, count=1, timeout=60)  # NYC's limits are read
        async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
            await admin.set_topic_configs(topic, {"max.message.bytes": "2048"})
            await produce(sf, topic, [Rec(b"big", b"x" * 8000, partition=0)])
            failure = await topic_failed(control, topic)
            assert f"{topic}/0@1" in failure.reason
            assert sup.states["SF->NYC"].state != "failed"  # the flow goes on
            assert await committed(sf, group, topic, 1) == {0: 1}
            await admin.set_topic_configs(topic, {"max.message.bytes": "1048576"})
        await eventually(lambda: topic not in control.failures, timeout=60, message="resumed")
        copied = await consume_all(nyc, topic, count=2, timeout=60, settle=1.0)
    assert [r.value for r in copied] == [b"first", b"x" * 8000]


async def test_missing_target_topic_with_topic_sync_off_names_the_topic_and_the_fix(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    # topic_sync.enabled: false means the operator owns the target's topics: one that does not
    # exist must say which topic, where, and the two fixes, and copying must start by itself
    # once the operator creates it.
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, _recs(5, {}))
    settings = _settings(sf, nyc, group, topic_sync=False, request_timeout_ms=5000)
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        state = sup.states["SF->NYC"]
        await eventually(lambda: state.last_error, timeout=60, message="an error")
        error = state.last_error or ""
        await create_topic(nyc, topic, partitions=1)
        copied = await consume_all(nyc, topic, count=5, timeout=90, settle=0.5)
    assert f"{topic} does not exist in NYC" in error
    assert "topic_sync.enabled" in error
    assert [r.value for r in copied] == [f"v{i}".encode() for i in range(5)]


async def test_dead_letter_topic_refusing_the_dead_letter_stops_the_flow_without_restarts(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    # NYC's topic turns compacted after the flow read its limits, so a null-key record is
    # refused by the broker, not by the screen; its dead letter (the record, whole: 4000
    # bytes) is refused in turn by a dead-letter topic the operator made small. No retry can
    # fix either: the flow must stop once, naming the dead-letter topic, not restart forever.
    # (Topic sync off: it would make NYC's topic like SF's again.)
    sf, nyc, topic, group = await _setup(
        dc_clusters, unique_name, [Rec(b"k", b"first", partition=0)]
    )
    await create_topic(nyc, topic, partitions=1)
    dlq = await create_topic(nyc, unique_name("dlq"), config={"max.message.bytes": "1024"})
    settings = _settings(
        sf, nyc, group, on_error="dead-letter", dead_letter_topic=dlq, topic_sync=False
    )
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        state = sup.states["SF->NYC"]
        await consume_all(nyc, topic, count=1, timeout=60)  # NYC's limits are read
        async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
            await admin.set_topic_configs(topic, {"cleanup.policy": "compact"})
        await produce(sf, topic, [Rec(None, b"x" * 4000, partition=0)])
        await eventually(
            lambda: state.state == "failed" or state.restarts >= 3,
            timeout=60,
            message="stopped, or restarting",
        )
        offsets = await committed(sf, group, topic, 1)
    assert state.state == "failed"
    assert state.restarts == 0
    assert f"NYC/{dlq} refused" in (state.last_error or "")
    assert "fix the dead-letter topic's config" in (state.last_error or "")
    assert offsets == {0: 1}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_unreachable_target_restarts_with_backoff_and_commits_nothing(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, _, topic, group = await _setup(dc_clusters, unique_name, _recs(5, {}))
    nowhere = f"127.0.0.1:{_closed_port()}"
    settings = FlowSettings(
        "SF",
        "NYC",
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nowhere, "request_timeout_ms": 2000},
        group_id=group,
    )
    sup = Supervisor(
        [(settings, OriginOnlyRouter("SF", "NYC", exact(topic)))],
        Metrics(),
        backoff=Backoff(initial_s=0.2, max_s=0.5),
        shutdown_timeout_s=10,
    )
    run = asyncio.create_task(sup.run(install_signals=False))
    await eventually(
        lambda: sup.states["SF->NYC"].restarts >= 2, timeout=60, message="two restarts"
    )
    ok, detail = sup.health()
    sup.stop()
    await asyncio.wait_for(run, 30)
    assert not ok
    assert "NYC" in (detail["flows"]["SF->NYC"]["last_error"] or "") or detail["flows"]
    assert await committed(sf, group, topic, 1) == {0: None}


async def test_deleted_target_topic_is_recreated_and_nothing_is_lost(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc, topic, group = await _setup(dc_clusters, unique_name, _recs(50, {}))
    settings = FlowSettings(
        "SF",
        "NYC",
        {"bootstrap_servers": sf},
        {"bootstrap_servers": nyc},
        group_id=group,
        request_timeout_ms=5000,
        topic_sync_interval_s=2,
    )
    sup = Supervisor(
        [(settings, OriginOnlyRouter("SF", "NYC", exact(topic)))],
        Metrics(),
        backoff=Backoff(initial_s=0.5, max_s=1),
        shutdown_timeout_s=10,
    )
    run = asyncio.create_task(sup.run(install_signals=False))
    try:
        await consume_all(nyc, topic, count=50, timeout=60)
        await eventually(lambda: _is(committed(sf, group, topic, 1), {0: 50}), message="commit")
        await delete_topic(nyc, topic)
        await produce(
            sf, topic, [Rec(f"n{i}".encode(), f"new{i}".encode(), partition=0) for i in range(50)]
        )
        again = await consume_all(nyc, topic, count=50, timeout=90)
        await eventually(
            lambda: _is(committed(sf, group, topic, 1), {0: 100}), timeout=60, message="commit 100"
        )
    finally:
        sup.stop()
        await asyncio.wait_for(run, 30)
    assert sorted(r.value for r in again) == sorted(f"new{i}".encode() for i in range(50))


async def test_source_topic_whose_prefixed_name_is_too_long_fails_alone_naming_the_fix(
    dc_clusters: dict[str, DcCluster], unique_name: Names
) -> None:
    """In prefix mode SF's 247-character topic is NYC's `SF.` + 247 = 250 characters, over
    Kafka's 249: the target refuses to create it. That topic fails, naming the fix; the flow's
    other topic copies on (the whole flow stopped for good on the refusal)."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("long")[:40].ljust(247, "x"))
    short = await create_topic(sf, unique_name("short"))
    await produce(sf, topic, [Rec(b"k", b"v")])
    await produce(sf, short, [Rec(b"k", b"s")])
    t = read_yaml(
        f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  NYC: {{bootstrap: '{nyc}'}}\n"
        f"flows: [SF->NYC]\ntopics: ['{topic}', '{short}']\nloop_prevention: prefix\n"
        "heartbeats: {enabled: false}\ncheckpoints: {enabled: false}\n"
    )
    [(settings, router)] = build_flows(t, t.inbound("NYC"))
    async with supervised(settings, router) as sup:
        failure = await topic_failed(sup.plane.controls[settings.name], topic)
        [copied] = await consume_all(nyc, f"SF.{short}", count=1, timeout=60)
        state = sup.states[settings.name]
    assert state.state != "failed", state.last_error
    assert copied.value == b"s"
    assert f"NYC refuses to create topic SF.{topic}" in failure.reason
    assert "250 characters, over Kafka's 249" in failure.reason
    assert "topics.exclude" in failure.reason
