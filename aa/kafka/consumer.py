"""What aa sets and reads inside an aiokafka consumer that aiokafka has no public call for
(see :mod:`aa.kafka.private`): the fetcher's sizes, whether a fetch is in flight, which broker
it reads, and a metadata refresh."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition


class FetchSizes:
    """A started consumer's fetcher: per-partition fetch size and minimum bytes set while it
    runs (aiokafka takes them only at construction), and what it is doing now."""

    __slots__ = ("_fetcher",)

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._fetcher: Any = consumer._fetcher

    def set(self, partition_bytes: int, min_bytes: int) -> None:
        """Fetch at most ``partition_bytes`` per partition, answered once ``min_bytes`` are
        there, from the next fetch request on."""
        self._fetcher._max_partition_fetch_bytes = partition_bytes
        self._fetcher._fetch_min_bytes = min_bytes

    @property
    def partition_bytes(self) -> int:
        return int(self._fetcher._max_partition_fetch_bytes)

    @property
    def min_bytes(self) -> int:
        return int(self._fetcher._fetch_min_bytes)

    def in_flight(self) -> bool:
        """Whether a fetch request has been sent and not answered."""
        return bool(self._fetcher._in_flight)

    def broker_of(self, tp: TopicPartition) -> int | None:
        """The broker the next fetch of ``tp`` goes to (``None`` or -1: not known)."""
        node: int | None = self._fetcher._select_read_replica(tp)
        return node


async def refresh_metadata(consumer: AIOKafkaConsumer) -> None:
    """Ask the cluster for the consumer's topics now, so :meth:`partitions_for_topic` and
    :func:`known_topics` see topics and partitions created since."""
    await consumer._client.force_metadata_update()


def known_topics(consumer: AIOKafkaConsumer) -> set[str]:
    """The topics in the consumer's metadata (after :func:`refresh_metadata`: the cluster's
    as of then)."""
    return set(consumer._client.cluster.topics())
