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
