"""A consumer group assignor aa defines (aiokafka's assignor base and member protocol are not
public API): :func:`assignor` turns a pure function of the partitions found and the members'
ids into the class aiokafka's ``partition_assignment_strategy`` takes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from aiokafka import TopicPartition
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

Assign = Callable[[Sequence[TopicPartition], Sequence[str]], Mapping[str, Iterable[TopicPartition]]]
"""The partitions of the members' topics and the members' ids -> each member's partitions."""


class _Assignor(AbstractPartitionAssignor):  # type: ignore[misc]  # aiokafka is untyped
    name = "aa"
    version = 0
    split: Assign

    @classmethod
    def assign(
        cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        topics = {t for m in members.values() for t in m.subscription}
        found = [
            TopicPartition(t, p)
            for t in sorted(topics)
            for p in sorted(cluster.partitions_for_topic(t) or ())
        ]
        out = {}
        given = cls.split(found, list(members))
        for member in members:
            held: dict[str, list[int]] = {}
            for tp in sorted(given.get(member, ())):
                held.setdefault(tp.topic, []).append(tp.partition)
            out[member] = ConsumerProtocolMemberAssignment(cls.version, sorted(held.items()), b"")
        return out

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(cls.version, list(topics), b"")

    @classmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        return None


def assignor(name: str, split: Assign) -> type:
    """A group assignor called ``name`` (members whose assignors share no name are refused by
    the group: ``InconsistentGroupProtocolError``) that gives each member ``split``'s share."""
    return type(f"Assignor_{name}", (_Assignor,), {"name": name, "split": staticmethod(split)})
