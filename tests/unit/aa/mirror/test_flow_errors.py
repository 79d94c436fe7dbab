"""A FlowError must survive what aiokafka does with the error a flow abandons its producer with
(``abandon``: ``fail_all`` copies it once per pending ``send()`` future)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    IllegalOperation,
    KafkaConnectionError,
    TopicAuthorizationFailedError,
)

from aa.mirror.eos import ExactlyOnce
from aa.mirror.errors import (
    FlowError,
    TransactionBroken,
    is_crash,
    not_authorized,
    topic_not_authorized,
)
from aa.mirror.pending import TopicsFailed
from aa.mirror.restarts import CRASH_LIMIT, Backoff, FlowState, Streak
from aa.mirror.settings import FlowSettings
from aa.mirror.target import Target
from tests.helpers.mirror import stage_context

pytestmark = pytest.mark.unit


def test_flow_error_abandoning_pending_sends_can_be_copied() -> None:
    """Seen: a flow stopping on a malformed record while an offset sync was in flight failed
    with ``TypeError: FlowError.__init__() missing 2 required keyword-only arguments`` raised
    from aiokafka's ``copy.copy(exception)``, hiding the real error."""
    error = FlowError("SF->NYC: the flow stopped", kind="stopped", retriable=True)
    for twin in (copy.copy(error), pickle.loads(pickle.dumps(error))):
        assert (str(twin), twin.kind, twin.retriable) == (str(error), "stopped", True)


def test_acl_refusal_names_the_sasl_principal_the_dc_and_the_grant() -> None:
    settings = FlowSettings(
        "SF",
        "NYC",
        {"bootstrap_servers": "sf:9092"},
        {"bootstrap_servers": "nyc:9092", "sasl_plain_username": "aa-mirror"},
        "aa.mirror.SF.NYC",
    )
    wrapped = FlowError("producing failed", kind="x", retriable=True)
    wrapped.__cause__ = TopicAuthorizationFailedError("users")
    error = not_authorized(wrapped, settings, "target")
    assert error is not None
    assert (error.kind, error.retriable) == ("not-authorized", False)
    assert str(error).startswith("SF->NYC: NYC does not allow this flow to write topic users")
    assert (
        "kafka-acls.sh --bootstrap-server nyc:9092 --add --allow-principal User:aa-mirror "
        "--operation Write --topic users, then restart aa"
    ) in str(error)
    # raised by the consumer as it is: the source's topic or group
    group = not_authorized(GroupAuthorizationFailedError("aa.mirror.SF.NYC"), settings)
    assert "SF does not allow this flow to use consumer group" in str(group)
    assert "<the principal aa connects to SF as>" in str(group)
    assert not_authorized(KafkaConnectionError("down"), settings) is None


def test_acl_refusal_to_read_an_internal_topic_of_the_target_names_the_target() -> None:
    """The flow reads its offset syncs and exactly-once positions from the target; a consumer
    raises the refusal as it is, which read as the source's topic (the wrong cluster)."""
    settings = FlowSettings("SF", "NYC", {"bootstrap_servers": "sf"}, {}, group_id="g")
    for topic in (settings.sync_topic, settings.eos_offsets_topic):
        error = not_authorized(TopicAuthorizationFailedError(topic), settings)
        assert f"SF->NYC: NYC does not allow this flow to read topic {topic}" in str(error)
        assert f"--operation Read --topic {topic}," in str(error)


def test_failed_topics_survive_a_copy_and_restart_the_run_at_once_outside_the_streak() -> None:
    """A run ended for topics the target refused (:class:`TopicsFailed`): they are paused by
    then, so the next run starts at once, and however often it happens the streak neither
    grows the backoff nor parks the flow; a real failure after it backs off as before."""
    failed = TopicsFailed("SF->NYC: users failed", refusals={})
    twin = copy.copy(failed)
    assert (twin.kind, twin.retriable, str(twin)) == ("topic-failed", True, str(failed))
    streak, state, backoff = Streak(), FlowState("SF->NYC"), Backoff(1.0, 60.0)
    for _ in range(2 * CRASH_LIMIT):
        assert streak.failed(state, failed) is None
        assert streak.delay(backoff) == 0.0
    assert streak.failed(state, KafkaConnectionError("down")) is None
    assert streak.delay(backoff) == 1.0


def test_a_target_topic_the_acl_refuses_is_that_topics_failure_with_the_grant() -> None:
    settings = FlowSettings(
        "SF", "NYC", {"bootstrap_servers": "sf:9092"}, {"bootstrap_servers": "nyc:9092"}, "g"
    )
    reason = topic_not_authorized(TopicAuthorizationFailedError("users"), settings)
    assert reason is not None
    assert reason.startswith("NYC does not allow this flow to write topic users")
    assert "the topic stops (the flow's other topics go on)" in reason
    assert "--operation Write --topic users: the topic resumes by itself" in reason
    assert topic_not_authorized(GroupAuthorizationFailedError("g"), settings) is None
    assert topic_not_authorized(KafkaConnectionError("down"), settings) is None


class _NotInTransaction:
    """An exactly-once flow's producer once the target broke its transaction (an
    AddPartitionsToTxn refused by an ACL): aiokafka refuses every send until it is aborted."""

    def __init__(self) -> None:
        self.client = self

    def add_topic(self, topic: str) -> None:
        pass

    @property
    def cluster(self) -> _NotInTransaction:
        return self

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0}

    async def send_batch(self, builder: object, topic: str, *, partition: int) -> None:
        raise IllegalOperation("Can't send messages while not in transaction")


async def test_a_send_after_the_target_broke_the_transaction_ends_the_run_without_a_crash() -> None:
    """A topic the target's ACL refuses, in an exactly-once flow: the refusal puts the
    transaction in an abortable state, the refused batch fails a moment later, and a batch
    handed to the producer in between raised aiokafka's ``IllegalOperation``, counted as a
    crash (a loaded run: five, and the flow parked). It is the transaction's failure, which a
    restart gets past; the flow waits for the refused batch to say why (see
    ``MirrorFlow._fetch_loop``)."""
    s = FlowSettings(
        "SF", "NYC", {"bootstrap_servers": "-"}, {"bootstrap_servers": "-"}, "g",
        delivery="exactly-once",
    )  # fmt: skip
    ctx = stage_context(s, delivery=ExactlyOnce(s))
    ctx = dataclasses.replace(
        ctx, clients=dataclasses.replace(ctx.clients, producer=_NotInTransaction())
    )
    with pytest.raises(TransactionBroken) as raised:
        await Target(ctx).submit(object(), "t", 0)
    assert raised.value.retriable
    assert not is_crash(raised.value)
    assert "transaction" in str(raised.value)
