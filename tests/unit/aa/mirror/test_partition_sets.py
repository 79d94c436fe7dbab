"""Partition sets of an exactly-once flow (aa.mirror.partition_sets): every process computes
the same sets, and the group's assignor gives each member whole sets."""

from __future__ import annotations

from aiokafka import TopicPartition
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from aa.mirror.partition_sets import assignor, set_of, share, split


class Cluster:
    def __init__(self, partitions: dict[str, int]) -> None:
        self._partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._partitions.get(topic)
        return set(range(n)) if n else None


def test_every_partition_falls_in_one_set_and_a_topics_partitions_spread_over_them() -> None:
    tps = [TopicPartition(t, p) for t in ("orders", "users") for p in range(8)]
    by_set = split(tps, 4)
    assert sorted(tp for tps_ in by_set.values() for tp in tps_) == sorted(tps)
    assert all(len(v) == 4 for v in by_set.values())  # 2 of each topic per set
    assert {set_of(tp, 4) for tp in tps[:4]} == {0, 1, 2, 3}


def test_members_get_whole_sets_and_more_members_than_sets_leave_some_idle() -> None:
    assert share(4, ["b", "a"]) == {"a": [0, 2], "b": [1, 3]}
    assert share(2, ["c", "a", "b"]) == {"a": [0], "b": [1], "c": []}
    assert share(1, ["a"]) == {"a": [0]}


def test_the_assignor_gives_each_member_the_partitions_of_its_sets() -> None:
    cls = assignor(2)
    members = {m: ConsumerProtocolMemberMetadata(0, ["orders", "users"], b"") for m in ("m1", "m2")}
    out = cls.assign(Cluster({"orders": 6, "users": 3}), members)
    held = {m: {TopicPartition(t, p) for t, ps in a.assignment for p in ps} for m, a in out.items()}
    assert held["m1"].isdisjoint(held["m2"])
    assert len(held["m1"] | held["m2"]) == 9
    for k, m in enumerate(("m1", "m2")):
        assert all(set_of(tp, 2) == k for tp in held[m])


def test_processes_with_other_set_counts_speak_other_protocols() -> None:
    assert assignor(2).name != assignor(3).name  # type: ignore[attr-defined]
