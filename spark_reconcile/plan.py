"""The one place the job reads the topology (``aa.config``/``aa.policy``): which DCs, which of
their topics, under which logical name, and which DCs should hold an origin's records.

The mirror and the job load the same file, so "should have it" here is exactly what the flows
copy: DC X should hold origin O's records of topic T when X is on O's route tree
(:class:`aa.policy.RouteTable`) and the flow that feeds X copies T.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aa.config import Datacenter, Topology
from aa.policy import RouteTable, TopicSelector, policy_for
from aa.protocols import ReplicationPolicy


@dataclass(frozen=True, slots=True)
class EventTopics:
    """Logical topics that hold conflict envelopes (``fullmatch`` regexes) and their resolver."""

    rules: tuple[tuple[str, str], ...] = ()

    def resolver_for(self, logical_topic: str) -> str | None:
        for pattern, resolver in self.rules:
            if re.fullmatch(pattern, logical_topic):
                return resolver
        return None

    @classmethod
    def parse(cls, specs: Iterable[str], default_resolver: str = "lww") -> EventTopics:
        """``PATTERN`` or ``PATTERN=RESOLVER`` per spec (``users``, ``orders\\..*=field-lww``)."""
        rules = []
        for spec in specs:
            pattern, _, resolver = spec.partition("=")
            re.compile(pattern)
            rules.append((pattern, resolver or default_resolver))
        return cls(tuple(rules))


@dataclass(frozen=True, slots=True)
class TopicRead:
    """One physical topic of one DC to read, with its logical name (prefix removed)."""

    dc: str
    topic: str
    logical: str


class ReadPlan:
    """What to read from each DC and what to expect where, derived from the topology."""

    def __init__(self, topology: Topology, events: EventTopics | None = None) -> None:
        self.topology = topology
        self.events = events or EventTopics()
        self.policy: ReplicationPolicy = policy_for(topology)
        self.routes = RouteTable(topology.dc_names, topology.flows)
        self._selectors = {
            f.name: TopicSelector(topology, f, routes=self.routes) for f in topology.flows
        }
        self._heartbeats = topology.heartbeats.topic if topology.heartbeats.enabled else None

    @property
    def dcs(self) -> tuple[str, ...]:
        return self.topology.dc_names

    def datacenter(self, name: str) -> Datacenter:
        return self.topology.datacenter(name)

    def logical(self, topic: str) -> str:
        return self.policy.original_topic(topic)

    def reads(self, dc: str, topics: Iterable[str]) -> list[TopicRead]:
        """The topics of ``dc`` worth reading: copied by some flow into or out of ``dc`` (by
        their logical name), never internal topics or heartbeats."""
        out = []
        for t in sorted(topics):
            if self.policy.is_internal_topic(t):
                continue
            logical = self.logical(t)
            if logical == self._heartbeats:
                continue
            if self._selected(logical):
                out.append(TopicRead(dc, t, logical))
        return out

    def _selected(self, logical: str) -> bool:
        for flow in self.topology.flows:
            sel = self._selectors[flow.name]
            name = self._name_in(flow.source, flow.source, logical)
            if sel.decide(name).target is not None:
                return True
        return False

    def _name_in(self, origin: str, dc: str, logical: str) -> str:
        """The physical name of ``origin``'s topic ``logical`` in ``dc``."""
        lp = self.topology.loop_prevention
        if lp.mode == "headers":
            return logical
        owned = f"{origin}{lp.separator}{logical}"
        if dc == origin and lp.style == "rename":
            return logical
        return owned

    def physical_name(self, origin: str, dc: str, logical: str) -> str:
        """The name ``origin``'s topic ``logical`` has in ``dc`` (where a repair writes)."""
        return self._name_in(origin, dc, logical)

    def topic_dcs(self, logical_topics: Iterable[str]) -> dict[str, list[str]]:
        """Logical topic -> every DC that should hold some of its records."""
        out: dict[str, set[str]] = {}
        for origin, logical, target in self.expected(logical_topics):
            out.setdefault(logical, set()).update((origin, target))
        return {t: sorted(dcs) for t, dcs in out.items()}

    def expected(self, logical_topics: Iterable[str]) -> list[tuple[str, str, str]]:
        """(origin, logical topic, target DC) for every DC that should hold origin's records."""
        out = []
        for logical in sorted(set(logical_topics)):
            for origin in self.dcs:
                for target, parent in sorted(self.routes.tree(origin).items()):
                    flow = next(
                        (
                            f
                            for f in self.topology.flows
                            if f.source == parent and f.target == target
                        ),
                        None,
                    )
                    if flow is None:
                        continue
                    name = self._name_in(origin, parent, logical)
                    if self._selectors[flow.name].decide(name).target is not None:
                        out.append((origin, logical, target))
        return out

    def flows_by_name(self) -> Mapping[str, tuple[str, str]]:
        return {f.name: (f.source, f.target) for f in self.topology.flows}
