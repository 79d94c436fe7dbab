"""A topic of a flow fails, not the flow: what the fetch loop does when the route stage
stopped a partition at a record the target refuses for good (``on_error: fail``), and when a
failed topic copies again (see :mod:`aa.mirror.control` for the state and the retries)."""

from __future__ import annotations

import time

from aa.mirror.context import StageContext
from aa.mirror.control import FlowControl, TopicFailure
from aa.mirror.pending import Pending
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
            failure = control.fail_topic(
                TopicFailure(tp.topic, tp.partition, refusal.offset, refusal.reason)
            )
            self.ctx.metrics.errors.labels(**self.ctx.labels, kind="topic-failed").inc()
            clients.log.error(
                "topic_failed",
                topic=tp.topic,
                partition=tp.partition,
                offset=refusal.offset,
                kind=refusal.kind,
                error=refusal.reason,
                attempts=failure.attempts,
                retry_in_s=round(failure.retry_at - time.time(), 1),
            )

    def recovered(self, control: FlowControl, pending: Pending) -> None:
        """Failed topics whose failed partition was copied past its refused record run
        again."""
        if not control.failures:
            return
        stopped = {tp.topic for tp in pending.failed}
        for tp, offset in pending.offsets.items():
            f = control.failures.get(tp.topic)
            if f is None or tp.topic in stopped or tp.partition != f.partition:
                continue
            if offset > f.offset:
                control.recovered(tp.topic)
                self.ctx.clients.log.info("topic_recovered", topic=tp.topic, attempts=f.attempts)
