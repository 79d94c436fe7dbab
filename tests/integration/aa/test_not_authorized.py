"""A flow whose principal an ACL refuses (a topic it may not read, a group it may not use, a
transactional id it may not hold, its offset-sync topic): no restart gets past an ACL, so the
flow stops at once with one message that names the DC, the resource, the operation and the fix,
and commits nothing it did not copy. Once the ACL allows it, a new start copies everything,
once. A target topic it may not write is one topic's resource: that topic fails alone, and
resumes by itself once the ACL allows it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from aa.admin import ClusterAdmin
from aa.mirror.operate import RunningProcess
from tests.conftest import DcCluster
from tests.helpers import acls
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import (
    OriginOnlyRouter,
    committed,
    eos_flow,
    exact,
    running_flow,
    running_supervisor,
    sf_to_nyc,
    short_backoffs,
    supervised,
    topic_failed,
)

pytestmark = pytest.mark.integration

Names = Callable[[str], str]
N = 20
ISOLATION = "read_committed"


@pytest.fixture
async def authorizing(dc_clusters: dict[str, DcCluster]) -> dict[str, DcCluster]:
    for dc in ("SF", "NYC"):
        if not await acls.has_authorizer(dc_clusters[dc].bootstrap):
            pytest.skip(f"{dc}'s brokers check no ACLs (the local backend's do)")
    return dc_clusters


async def _stops_once(settings: Any, router: Any, meanwhile: Any = None) -> str:
    """Run the flow under a supervisor until it stops (``meanwhile`` awaited once it runs);
    its one message."""
    async with supervised(settings, router) as sup:
        state = sup.states[settings.name]
        if meanwhile is not None:
            await meanwhile
        await eventually(
            lambda: state.state == "failed" or state.restarts >= 2,
            timeout=60,
            message="the flow stops",
        )
    assert (state.state, state.restarts) == ("failed", 0), state.last_error
    return state.last_error or ""


async def _written(clusters: dict[str, DcCluster], unique_name: Names, hint: str) -> str:
    sf, nyc = clusters["SF"].bootstrap, clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name(hint))
    await create_topic(nyc, topic)
    await produce(sf, topic, [Rec(f"k{i}".encode(), f"v{i}".encode()) for i in range(N)])
    return topic


async def _copies_once_allowed(settings: Any, router: Any, nyc: str, topic: str) -> None:
    async with running_flow(settings, router):
        copied = await consume_all(nyc, topic, count=N, timeout=60, settle=1.0)
    assert sorted(r.value for r in copied) == sorted(f"v{i}".encode() for i in range(N))


@pytest.mark.parametrize(
    ("dc", "resource", "operation"),
    [("SF", "topic", "read"), ("SF", "group", "read")],
    ids=["source-topic-read", "group"],  # a target topic's write: fails that topic alone
)
async def test_topic_or_group_the_mirror_may_not_use_stops_the_flow_once_and_commits_nothing(
    authorizing: dict[str, DcCluster],
    unique_name: Names,
    dc: str,
    resource: acls.Resource,
    operation: acls.Operation,
) -> None:
    sf, nyc = authorizing["SF"].bootstrap, authorizing["NYC"].bootstrap
    topic = await _written(authorizing, unique_name, f"acl-{resource}-{operation}")
    group = unique_name("g")
    name = topic if resource == "topic" else group
    await acls.deny(authorizing[dc].bootstrap, resource, name, operation)
    settings = sf_to_nyc(sf, nyc, group, linger_ms=0)
    router = OriginOnlyRouter("SF", "NYC", exact(topic))
    error = await _stops_once(settings, router)
    doing = f"{operation} topic" if resource == "topic" else "use consumer group"
    assert f"{dc} does not allow this flow to {doing} {name}" in error, error
    assert f"--operation {operation.title()} --{resource} {name}, then restart aa" in error, error
    assert await committed(sf, group, topic, 1) == {0: None}
    await acls.allow(authorizing[dc].bootstrap, resource, name, operation)
    await _copies_once_allowed(settings, router, nyc, topic)


async def test_exactly_once_transactional_id_the_mirror_may_not_hold_stops_the_flow_once(
    authorizing: dict[str, DcCluster], unique_name: Names
) -> None:
    flow = await eos_flow(authorizing, unique_name, "acl-txn", partitions=1)
    await produce(flow.sf, flow.topic, [Rec(b"k", b"v")])
    txn = flow.settings.transactional_id
    await acls.deny(flow.nyc, "transactional_id", txn, "write")
    error = await _stops_once(flow.settings, flow.router)
    target = flow.settings.target
    assert f"{target} does not allow this flow to use transactional id {txn}" in error, error
    assert not await consume_all(flow.nyc, flow.topic, count=0, timeout=2, settle=1.0)


async def test_offset_sync_topic_the_mirror_may_not_write_stops_the_flow_once(
    authorizing: dict[str, DcCluster], unique_name: Names
) -> None:
    sf, nyc = authorizing["SF"].bootstrap, authorizing["NYC"].bootstrap
    topic = await _written(authorizing, unique_name, "acl-syncs")
    syncs = unique_name("syncs")
    await create_topic(nyc, syncs)
    await acls.deny(nyc, "topic", syncs, "write")
    settings = sf_to_nyc(sf, nyc, unique_name("g"), linger_ms=0, offset_sync_topic=syncs)

    async def copied_then_more() -> None:
        # the syncs of a batch are written after it is copied (within the flush interval);
        # their failure stops the flow whether or not another batch comes to settle
        await consume_all(nyc, topic, count=N, timeout=60)
        await produce(sf, topic, [Rec(b"k", b"more")])

    router = OriginOnlyRouter("SF", "NYC", exact(topic))
    error = await _stops_once(settings, router, copied_then_more())
    assert f"NYC does not allow this flow to write topic {syncs}" in error, error


async def test_source_configs_the_mirror_may_not_read_stop_it_and_are_not_wiped_from_the_copy(
    authorizing: dict[str, DcCluster], unique_name: Names
) -> None:
    """Topic sync read the source's configs, dropped the topics it could not read as if they
    had none, and then set the target topic's configs to match: a compacted copy became a
    delete-policy topic (its records expire after the default 7 days)."""
    sf, nyc = authorizing["SF"].bootstrap, authorizing["NYC"].bootstrap
    compact = {"cleanup.policy": "compact"}
    topic = await create_topic(sf, unique_name("acl-configs"), config=compact)
    await create_topic(nyc, topic, config=compact)
    await produce(sf, topic, [Rec(f"k{i}".encode(), b"v") for i in range(N)])
    await acls.deny(sf, "topic", topic, "describe_configs")
    settings = sf_to_nyc(sf, nyc, unique_name("g"), linger_ms=0)
    error = await _stops_once(settings, OriginOnlyRouter("SF", "NYC", exact(topic)))
    assert f"SF does not allow this flow to read the configs of topic {topic}" in error, error
    assert f"--operation DescribeConfigs --topic {topic}" in error, error
    async with ClusterAdmin("NYC", bootstrap_servers=nyc) as admin:
        assert (await admin.topic_configs([topic]))[topic].get("cleanup.policy") == "compact"


async def test_exactly_once_offset_sync_topic_the_mirror_may_not_write_stops_the_flow_once(
    authorizing: dict[str, DcCluster], unique_name: Names
) -> None:
    """Inside a transaction the same refusal was a retriable "offset syncs failed": a restart
    loop."""
    syncs = unique_name("eos-syncs")
    flow = await eos_flow(
        authorizing, unique_name, "acl-eos-syncs", partitions=1, offset_sync_topic=syncs
    )
    await create_topic(flow.nyc, syncs)
    await acls.deny(flow.nyc, "topic", syncs, "write")
    await produce(flow.sf, flow.topic, [Rec(b"k", b"v")])
    error = await _stops_once(flow.settings, flow.router)
    assert f"{flow.settings.target} does not allow this flow to write topic {syncs}" in error, error


def _values_of(prefix: str, start: int, n: int) -> list[Rec]:
    return [Rec(None, f"{prefix}-{i}".encode()) for i in range(start, start + n)]


async def _held(bootstrap: str, topic: str, n: int) -> None:
    """Wait until the target's ``topic`` holds ``n`` committed records."""
    await consume_all(bootstrap, topic, count=n, timeout=60, isolation_level=ISOLATION)


async def _denied_and_other(
    sf: str, nyc: str, unique_name: Names, hint: str, **settings: Any
) -> tuple[str, str, Any, OriginOnlyRouter]:
    """Two topics in both DCs (the one the test will deny, and another) and an SF->NYC flow of
    both, with ``settings``."""
    tag = uuid.uuid4().hex[:6]
    denied = await create_topic(sf, unique_name(f"{hint}-denied"))
    other = await create_topic(sf, unique_name(f"{hint}-other"))
    for topic in (denied, other):
        await create_topic(nyc, topic)
    flow = sf_to_nyc(
        sf, nyc, unique_name("g"), names=(f"S{tag}", f"N{tag}"), linger_ms=0, **settings
    )
    router = OriginOnlyRouter(flow.source, flow.target, f"^({denied}|{other})$")
    return denied, other, flow, router


@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
async def test_a_target_topic_the_acl_refuses_fails_alone_and_resumes_once_granted(
    authorizing: dict[str, DcCluster], unique_name: Names, delivery: str
) -> None:
    """The target's ACL refuses writes to one target topic of a flow of two (issue 30): before,
    the whole flow stopped for good; now that topic goes ``failed`` with a reason naming the
    DC, the topic, the operation and the fix, its committed offset stays at its first uncopied
    record, the other topic keeps copying, and granting the write resumes it by itself with
    nothing lost and (exactly-once) nothing twice."""
    sf, nyc = authorizing["SF"].bootstrap, authorizing["NYC"].bootstrap
    denied, other, settings, router = await _denied_and_other(
        sf, nyc, unique_name, "acl", delivery=delivery
    )
    await produce(sf, denied, _values_of("d", 0, 5))
    await produce(sf, other, _values_of("o", 0, 5))
    sup = short_backoffs([(settings, router)])
    control = sup.plane.controls[settings.name]
    control.retry_s, control.retry_max_s = 0.5, 2.0  # tried again often, for the test
    async with running_supervisor(sup):
        await _held(nyc, denied, 5)
        await acls.deny(nyc, "topic", denied, "write")
        await produce(sf, denied, _values_of("d", 5, 5))
        failure = await topic_failed(control, denied)
        assert (failure.partition, failure.offset) == (0, 5)
        target = settings.target
        assert f"{target} does not allow this flow to write topic {denied}" in failure.reason
        assert f"--operation Write --topic {denied}" in failure.reason, failure.reason
        state = RunningProcess(sup, None, dc=None, flow=None).state()  # type: ignore[arg-type]
        assert state["flows"][settings.name]["topics"][denied]["state"] == "failed"
        assert sup.states[settings.name].state != "failed"  # the flow goes on
        await produce(sf, other, _values_of("o", 5, 5))
        await _held(nyc, other, 10)
        if delivery == "at-least-once":
            assert await committed(sf, settings.group_id, denied, 1) == {0: 5}
        assert denied in control.failures  # tried again and refused again meanwhile
        await acls.allow(nyc, "topic", denied, "write")
        await eventually(lambda: denied not in control.failures, timeout=60, message="resumed")
        await _held(nyc, denied, 10)
        if delivery == "at-least-once":
            await eventually(
                lambda: _committed_past(sf, settings.group_id, denied, 10),
                timeout=60,
                message="committed past the refusal once copied",
            )
        got = {
            t: await consume_all(nyc, t, count=10, isolation_level=ISOLATION, settle=2.0)
            for t in (denied, other)
        }
    for topic, prefix in ((denied, "d"), (other, "o")):
        values = [r.value for r in got[topic]]
        assert set(values) == {f"{prefix}-{i}".encode() for i in range(10)}  # nothing lost
        if delivery == "exactly-once":  # read_committed: nothing twice
            assert len(values) == 10, values


async def test_an_exactly_once_flow_commits_its_other_topics_while_a_refused_topic_is_retried(
    authorizing: dict[str, DcCluster], unique_name: Names
) -> None:
    """One transaction carries every topic of an exactly-once flow: each retry of a topic the
    target's ACL refuses aborted it, and the run restarted, so while the refusal lasted the
    other topic committed nothing (the retry came before its transaction was due; a clean
    clone under load: 5 of 10 in 60 s). A refused topic is tried again only once the target
    would take it (its write permission asked of the target first): the others commit on,
    and granting the write resumes it."""
    sf, nyc = authorizing["SF"].bootstrap, authorizing["NYC"].bootstrap
    denied, other, settings, router = await _denied_and_other(
        sf, nyc, unique_name, "acl-eos", delivery="exactly-once", commit_interval_s=3.0
    )
    await acls.deny(nyc, "topic", denied, "write")
    await produce(sf, denied, _values_of("d", 0, 5))
    sup = short_backoffs([(settings, router)])
    control = sup.plane.controls[settings.name]
    control.retry_s, control.retry_max_s = 0.5, 0.5  # due again well before a commit
    async with running_supervisor(sup):
        await topic_failed(control, denied)
        await produce(sf, other, _values_of("o", 0, 5))
        await _held(nyc, other, 5)  # committed while the refusal lasts
        assert denied in control.failures
        assert control.failures[denied].attempts > 1  # tried again meanwhile, refused again
        await acls.allow(nyc, "topic", denied, "write")
        await eventually(lambda: denied not in control.failures, timeout=60, message="resumed")
        got = {
            t: await consume_all(nyc, t, count=5, isolation_level=ISOLATION, settle=2.0)
            for t in (denied, other)
        }
    for topic, prefix in ((denied, "d"), (other, "o")):
        assert sorted(r.value for r in got[topic]) == [f"{prefix}-{i}".encode() for i in range(5)]


async def _committed_past(bootstrap: str, group: str, topic: str, offset: int) -> bool:
    return (await committed(bootstrap, group, topic, 1))[0] == offset
