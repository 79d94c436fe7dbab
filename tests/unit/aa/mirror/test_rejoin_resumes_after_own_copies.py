"""At-least-once after the group dropped this member (issue 29, item 11: a network partition
drill found 30 duplicates with no restart): the copies the target acknowledged while the commit
failed are not copied again when the partitions come back."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import CommitFailedError

from aa.logs import get_logger
from aa.mirror.delivery import AtLeastOnce, FlowClients
from tests.helpers.mirror import sf_to_nyc

pytestmark = pytest.mark.unit

TP = TopicPartition("users", 0)


class _Consumer:
    def __init__(self, committed: int | None) -> None:
        self.committed_at = committed
        self.fail = False
        self.commits: list[dict[TopicPartition, int]] = []
        self.seeks: list[tuple[TopicPartition, int]] = []

    def assignment(self) -> set[TopicPartition]:
        return {TP}

    async def committed(self, tp: TopicPartition) -> int | None:
        return self.committed_at

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        if self.fail:
            raise CommitFailedError("the group has already rebalanced")
        self.commits.append(dict(offsets))
        self.committed_at = offsets.get(TP, self.committed_at)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))


async def _delivery(consumer: _Consumer) -> AtLeastOnce:
    d = AtLeastOnce(sf_to_nyc("127.0.0.1:1", "127.0.0.1:2", "g"))
    d._clients = FlowClients(None, consumer, None, None, get_logger("test"))  # type: ignore[arg-type]
    return d


async def test_a_partition_regained_after_a_failed_commit_resumes_after_its_copies() -> None:
    consumer = _Consumer(committed=40)
    d = await _delivery(consumer)
    consumer.fail = True  # the group dropped this member: the drain's commit is refused
    assert await d.commit({TP: 100}, final=True)
    consumer.fail = False
    await d.regained({TP})  # the rejoin gives the partition back; the group says 40
    assert consumer.commits == [{TP: 100}]
    assert consumer.seeks == [(TP, 100)]


async def test_a_commit_past_this_process_copies_wins() -> None:
    """Another member copied further meanwhile and committed: nothing to do."""
    consumer = _Consumer(committed=150)
    d = await _delivery(consumer)
    consumer.fail = True
    await d.commit({TP: 100}, final=True)
    consumer.fail = False
    await d.regained({TP})
    assert consumer.commits == []
    assert consumer.seeks == []


async def test_a_rewound_partition_resumes_where_copies_stopped() -> None:
    """A failed topic rewinds its partition: what was not copied is fetched again."""
    consumer = _Consumer(committed=40)
    d = await _delivery(consumer)
    consumer.fail = True
    await d.commit({TP: 100}, final=True)
    d.rewind(TP, 70)
    consumer.fail = False
    await d.regained({TP})
    assert consumer.seeks == [(TP, 70)]


async def test_a_recreated_topics_partition_is_read_from_its_start_not_past_old_copies() -> None:
    """The source topic was deleted and created again (offsets from 0; the broker dropped the
    group's offsets with it): the partition comes back with no commit, and the old
    incarnation's copies say nothing about the new one. Seeking past them skipped the new
    topic's first records (the deleted-and-recreated drill: 1,500 of 3,000 copied)."""
    consumer = _Consumer(committed=40)
    d = await _delivery(consumer)
    assert await d.commit({TP: 250}, final=True)  # the old incarnation, copied and committed
    consumer.committed_at = None  # deleted, created again: no commit
    await d.regained({TP})
    assert consumer.seeks == []
    assert await d.commit({TP: 100}, final=True)  # the new incarnation, copied to 100
    consumer.committed_at = 100
    await d.regained({TP})  # a rebalance: the commit is where the copies are
    assert consumer.seeks == []


async def test_a_partition_with_no_commit_is_not_sought_past_a_failed_one() -> None:
    """A partition whose group holds no commit at all (a topic created again after this
    process's commit failed) is read from where the group starts it: copies again, never
    skips."""
    consumer = _Consumer(committed=None)
    d = await _delivery(consumer)
    consumer.fail = True
    await d.commit({TP: 100}, final=True)
    consumer.fail = False
    await d.regained({TP})
    assert consumer.seeks == []
