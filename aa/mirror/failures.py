"""A topic of a flow fails, not the flow: what the fetch loop does when the route stage
stopped a partition at a record the target refuses for good (``on_error: fail``), and when a
failed topic copies again (see :mod:`aa.mirror.control` for the state and the retries)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from aa.mirror.context import StageContext
from aa.mirror.control import FlowControl, TopicFailure
from aa.mirror.pending import Pending, TopicRefusal, TopicsFailed
from aa.mirror.placement import Placement

STATES = ("running", "paused", "failed")


class TopicFailures:
    def __init__(self, ctx: StageContext, placement: Placement | None) -> None:
        self.ctx = ctx
        self.placement = placement
        self._shown: dict[str, str] = {}

    def show_states(self, control: FlowControl, topics: set[str]) -> None:
        """``aa_topic_state`` of the flow's assigned topics (the Grafana dashboard's panel)."""
        gauge, labels = self.ctx.metrics.topic_state, self.ctx.labels
        for topic in topics:
            state = control.topic_state(topic)
            if self._shown.get(topic) != state:
                for s in STATES:
                    gauge.labels(**labels, topic=topic, state=s).set(int(s == state))
                self._shown[topic] = state

    def failed(self, control: FlowControl, pending: Pending) -> None:
        """Fail the topics of the partitions ``pending`` stopped: each partition moves back to
        its refused record (fetched again at the retry), and its topic's partitions fetch
        nothing until then; nothing of them is committed past that record."""
        clients = self.ctx.clients
        for tp, refusal in pending.failed.items():
            clients.consumer.seek(tp, refusal.offset)
            self.ctx.delivery.rewind(tp, refusal.offset)
            if self.placement is not None:  # the retry reads the target's limits again
                self.placement.limits.pop(refusal.target, None)
            self._fail(control, tp, refusal)

    def refused(self, control: FlowControl, failed: TopicsFailed) -> None:
        """Fail the topics the target refused as their copies were settled: the run ends (see
        :class:`TopicsFailed`), and the next one starts with them paused."""
        first: dict[str, TopicPartition] = {}  # one failure per topic: its lowest partition
        for tp in sorted(failed.refusals):
            first.setdefault(tp.topic, tp)
        for tp in first.values():
            self._fail(control, tp, failed.refusals[tp])

    def _fail(self, control: FlowControl, tp: TopicPartition, refusal: TopicRefusal) -> None:
        self._failed(
            control,
            TopicFailure(
                tp.topic,
                tp.partition,
                refusal.offset,
                refusal.reason,
                kind=refusal.kind,
                target=refusal.target,
            ),
        )

    def _failed(self, control: FlowControl, failure: TopicFailure, **asked: bool) -> None:
        failure = control.fail_topic(failure)
        self.ctx.metrics.errors.labels(**self.ctx.labels, kind="topic-failed").inc()
        self.ctx.clients.log.error(
            "topic_failed",
            topic=failure.topic,
            partition=failure.partition,
            offset=failure.offset,
            kind=failure.kind,
            error=failure.reason,
            attempts=failure.attempts,
            retry_in_s=round(failure.retry_at - time.time(), 1),
            **asked,
        )

    async def ask_before_retry(self, control: FlowControl) -> None:
        """Exactly-once: before a topic the target's ACL refused is tried again, ask the target
        whether the flow may write it now; while it may not, the topic stays failed (backoff
        as after a refused try) and its retry never enters the transaction. One transaction
        carries every topic of the flow: a refused try aborts it, and the run restarts, so
        retries alone would keep the other topics from ever committing."""
        if not self.ctx.delivery.transactional:
            return
        due_now = set(control.retry_due(time.time()))
        due = [
            f for t, f in control.failures.items() if t in due_now and f.kind == "not-authorized"
        ]
        if not due:
            return
        try:
            allowed = await self.ctx.clients.target_admin.writable({f.target for f in due})
        except (KafkaError, OSError) as exc:  # no answer: the try itself says
            self.ctx.clients.log.warning("topic_permission_unknown", error=repr(exc))
            return
        for f in due:
            if allowed.get(f.target) is False:
                self._failed(control, f, asked_target=True)  # attempts + 1, the next backoff

    def recovered(self, control: FlowControl, settled: Mapping[TopicPartition, int]) -> None:
        """Failed topics whose failed partition was copied past its refused record (``settled``:
        per partition, the offset after the last copy the target acknowledged) run again."""
        for topic, f in list(control.failures.items()):
            if settled.get(TopicPartition(topic, f.partition), -1) > f.offset:
                control.recovered(topic)
                self.ctx.clients.log.info("topic_recovered", topic=topic, attempts=f.attempts)
