"""Topic naming policies: ``headers`` mode keeps names, ``prefix`` mode puts the owning DC in
the name. Both implement :class:`aa.protocols.ReplicationPolicy`."""

from __future__ import annotations

from collections.abc import Iterable

from aa.config import names
from aa.config.model import PrefixStyle, Topology
from aa.protocols import ReplicationPolicy


def is_internal(topic: str) -> bool:
    """Kafka's ``__*`` and ``.*`` topics, MM2's ``*.internal`` / ``*-internal`` and ``mm2-*``
    topics, and aa's own ``aa.*`` topics. Heartbeats are *not* internal: they are copied."""
    return topic.startswith(("__", ".", names.PREFIX, "mm2-")) or topic.endswith(
        (".internal", "-internal")
    )


class IdentityPolicy:
    """Same topic name in every DC (``loop_prevention: headers``)."""

    def format_remote_topic(self, source_dc: str, topic: str) -> str:
        return topic

    def topic_source(self, topic: str) -> str | None:
        return None

    def upstream_topic(self, topic: str) -> str | None:
        return None

    def original_topic(self, topic: str) -> str:
        return topic

    def is_internal_topic(self, topic: str) -> bool:
        return is_internal(topic)


class PrefixPolicy:
    """The owning DC's name prefixes the topic: ``SF.users`` belongs to SF.

    ``rename`` (MM2's DefaultReplicationPolicy): ``users`` written in SF is ``SF.users``
    elsewhere. ``book``: applications write ``SF.users`` in SF; it keeps its name everywhere.
    Unlike MM2, an already prefixed name is never prefixed again (no ``NYC.SF.users``): when a
    topology forwards ``SF.users`` through a hub, the copy keeps the name ``SF.users``.
    A prefix counts only when it is a DC of the topology.
    """

    def __init__(self, dcs: Iterable[str], separator: str = ".", style: PrefixStyle = "rename"):
        self.dcs = frozenset(dcs)
        self.separator = separator
        self.style = style

    def format_remote_topic(self, source_dc: str, topic: str) -> str:
        if self.style == "book" or self.topic_source(topic) is not None:
            return topic
        return f"{source_dc}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        head, sep, rest = topic.partition(self.separator)
        return head if sep and rest and head in self.dcs else None

    def upstream_topic(self, topic: str) -> str | None:
        if self.topic_source(topic) is None:
            return None
        return topic.partition(self.separator)[2]

    def original_topic(self, topic: str) -> str:
        while (up := self.upstream_topic(topic)) is not None:
            topic = up
        return topic

    def is_internal_topic(self, topic: str) -> bool:
        return is_internal(topic)


def policy_for(topology: Topology) -> ReplicationPolicy:
    """The naming policy of ``topology``'s loop-prevention mode."""
    lp = topology.loop_prevention
    if lp.mode == "headers":
        return IdentityPolicy()
    return PrefixPolicy(topology.dc_names, lp.separator, lp.style)
