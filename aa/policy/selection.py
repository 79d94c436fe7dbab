"""Which source topics a flow A→B copies, and under which name in B. Decided once per topic.

A topic is copied when it is not internal, its name passes the topic filter (in prefix mode the
filter may match the full name or the name without its DC prefix), and — in prefix mode — the
DC that owns it is one whose events the flow carries (see :mod:`aa.policy.routes`): never the
target itself, and in a full mesh only the source. The heartbeats topic is always copied while
heartbeats are enabled (MM2 does the same), whatever the filter says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from aa.config.model import Flow, Topology
from aa.policy.naming import policy_for
from aa.policy.routes import RouteTable

COPY = "copy"


@dataclass(frozen=True, slots=True)
class TopicDecision:
    """``target`` is the name in the target DC, or ``None`` with ``reason`` saying why not:
    ``internal``, ``not-included``, ``excluded``, ``target-owned`` (the topic carries the
    target's prefix), ``not-on-route`` (its owner's events reach the target another way),
    ``no-dc-prefix`` (book style: unprefixed topics stay local). ``owner`` is the DC whose
    prefix the topic carries, or the source DC for an unprefixed topic (prefix mode only)."""

    source_topic: str
    target: str | None
    reason: str = COPY
    owner: str | None = None


class TopicSelector:
    """Topic decisions of one flow, cached per topic name."""

    def __init__(self, topology: Topology, flow: Flow, *, routes: RouteTable | None = None) -> None:
        self.flow = flow
        self.policy = policy_for(topology)
        self.routes = routes or RouteTable(topology.dc_names, topology.flows)
        self.prefix = topology.loop_prevention.mode == "prefix"
        self.book = self.prefix and topology.loop_prevention.style == "book"
        filt = topology.topics_for(flow)
        self._include = filt.include
        self._exclude = filt.exclude
        self._inc = [re.compile(p) for p in filt.include]
        self._exc = [re.compile(p) for p in filt.exclude]
        hb = topology.heartbeats
        self._heartbeats = hb.topic if hb.enabled else None
        self._cache: dict[str, TopicDecision] = {}

    def decide(self, topic: str) -> TopicDecision:
        d = self._cache.get(topic)
        if d is None:
            d = self._cache[topic] = self._decide(topic)
        return d

    def select(self, topics: Iterable[str]) -> list[TopicDecision]:
        """Decisions for ``topics`` (all of them, copied or not), in name order."""
        return [self.decide(t) for t in sorted(topics)]

    def _decide(self, topic: str) -> TopicDecision:
        src, dst = self.flow.source, self.flow.target
        if self.policy.is_internal_topic(topic):
            return TopicDecision(topic, None, "internal")
        owner: str | None = None
        if self.prefix:
            owner = self.policy.topic_source(topic)
            if owner is None:
                if self.book:
                    return TopicDecision(topic, None, "no-dc-prefix")
                owner = src
            if owner == dst:
                return TopicDecision(topic, None, "target-owned", owner)
            if not self.routes.forwards(owner, src, dst):
                return TopicDecision(topic, None, "not-on-route", owner)
        names = [topic]
        if self.prefix and (up := self.policy.upstream_topic(topic)) is not None:
            names.append(up)
        if not self._is_heartbeats(topic):
            if not any(p.fullmatch(n) for p in self._inc for n in names):
                return TopicDecision(topic, None, "not-included", owner)
            if any(p.fullmatch(n) for p in self._exc for n in names):
                return TopicDecision(topic, None, "excluded", owner)
        return TopicDecision(topic, self.policy.format_remote_topic(src, topic), COPY, owner)

    def _is_heartbeats(self, topic: str) -> bool:
        if self._heartbeats is None:
            return False
        return topic == self._heartbeats or (
            self.prefix and self.policy.original_topic(topic) == self._heartbeats
        )

    def subscription(self) -> str:
        """A regex (``fullmatch``/``match`` with its anchors) of the source topics to consume:
        every topic :meth:`decide` copies matches it, so new topics are picked up live; it may
        match a few more (e.g. a name that only looks prefixed), which :meth:`decide` refuses."""
        inc = "|".join(f"(?:{p})" for p in self._include)
        exc = "|".join(f"(?:{p})" for p in self._exclude)
        internal = r"(?!__|\.|aa\.|mm2-)(?!.*[.-]internal$)"
        prefix = ""
        if self.prefix:
            sep = re.escape(getattr(self.policy, "separator", "."))
            owners = self.routes.origins_carried(self.flow.source, self.flow.target)
            owner_re = "|".join(re.escape(o) for o in owners)
            prefix = f"(?:(?:{owner_re}){sep})" + ("" if self.book else "?")
        body = internal
        if exc:
            body += f"(?!{prefix}(?:{exc})$)"
        body += f"{prefix}(?:{inc})"
        alts = [body]
        if self._heartbeats is not None:
            alts.append(
                f"{prefix}{re.escape(self._heartbeats)}"
                if self.prefix
                else re.escape(self._heartbeats)
            )
        return "^(?:" + "|".join(alts) + ")$"
