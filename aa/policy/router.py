"""Per-record decisions of one flow A→B: skip (would loop), forward (with which headers), or
malformed. Implements :class:`aa.protocols.Router`; pure, synchronous and cached.

Cost model (the hot path): the topic decision is cached per topic; a record without any
``aa-*`` header (written locally by an application) takes the fast path — one scan of its
header keys and a precomputed :class:`~aa.provenance.LocalStamp`; a record with provenance
headers pays one scan plus a dict lookup keyed by its raw ``aa-origin``/``aa-path`` values
(the decision for each distinct origin and path is computed once) and the check of its
``aa-src``.

Decision for a record with ``aa-*`` headers (origin O, path P, src S) read in A on flow A→B:

1. unless a mirror wrote it into A — it lies in a batch carrying a mirror's ``aa-batch`` mark
   (:mod:`aa.kafka.switch`, the ``believed`` offsets of :meth:`FlowRouter.route_batch`) and its
   headers are a mirror's (:func:`aa.provenance.mirrored_into`: all three well formed, P from O
   to A, S naming O and this topic) — it is *local*: an application wrote it in A, perhaps
   re-producing a mirrored record with its headers copied. Its stale ``aa-*`` headers are
   replaced by A's fresh provenance and it is forwarded like any local record — never
   skipped, never a reason to stop the flow;
2. P names a DC twice → skip ``looped``; B is O or on P → skip ``visited``;
3. headers mode: O not a DC of the topology → skip ``unknown-origin``; A→B not on O's route
   tree (:mod:`aa.policy.routes`) → skip ``not-on-route`` (in a full mesh: every record that did
   not originate in A);
4. otherwise forward with the application's headers followed by ``aa-origin`` O,
   ``aa-path`` P+B and the unchanged ``aa-src``.

A local record is forwarded with ``aa-origin`` A, ``aa-path`` A,B and ``aa-src`` naming its
topic, partition and offset in A. In prefix mode the topic decision has already chosen which
topics carry which origin, so step 3 is skipped; step 2 still guards against loops.

The decision is cached per (topic, raw ``aa-origin``, raw ``aa-path``, ``aa-src`` without its
offset); per record only the offset's digits are checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from aa.config.kinds import moment_ms
from aa.config.model import Flow, Topology
from aa.logs import get_logger
from aa.policy.routes import RouteTable
from aa.policy.selection import TopicDecision, TopicSelector
from aa.protocols import Headers, Route, Skip
from aa.provenance import (
    MAX_PATH_BYTES,
    MAX_SRC_BYTES,
    ORIGIN,
    PATH,
    PREFIX,
    SRC,
    LocalStamp,
    mirrored_into,
    strip,
)

CACHE_LIMIT = 4096
"""Distinct (origin, path) values remembered; far more than any real topology produces."""
_LOCAL = Skip("local")
"""Cached decision marker: the record is local (never returned to the flow)."""
_log = get_logger("aa.policy")

SKIP_LOOPED = Skip("looped")
SKIP_VISITED = Skip("visited")
SKIP_UNKNOWN_ORIGIN = Skip("unknown-origin")
SKIP_NOT_ON_ROUTE = Skip("not-on-route")
SKIP_NOT_ROUTED = Skip("not-routed")


class RecordLike(Protocol):
    """What :meth:`FlowRouter.route_batch` reads of a record (aiokafka's ConsumerRecord)."""

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def headers(self) -> Headers: ...


_Forward = tuple[tuple[str, bytes], tuple[str, bytes]]
"""The ``aa-origin`` and ``aa-path`` headers of a forwarded copy."""


class FlowRouter:
    """Routing of one flow; build one per flow and process (it caches per topic and origin)."""

    def __init__(self, topology: Topology, flow: Flow, *, routes: RouteTable | None = None) -> None:
        self.flow = flow
        self.source = flow.source
        self.target = flow.target
        self.routes = routes or RouteTable(topology.dc_names, topology.flows)
        self.topics = TopicSelector(topology, flow, routes=self.routes)
        self._headers_mode = topology.loop_prevention.mode == "headers"
        self.target_owns_topics = (
            self._headers_mode and topology.topic_sync.headers_mode == "create-only"
        )
        """Topic sync creates missing target topics but leaves existing ones alone: in headers
        mode the same-named topic in the target is the target DC's own application topic."""
        self._dcs = frozenset(topology.dc_names)
        self._stamps: dict[tuple[str, int], LocalStamp] = {}
        self._separator = (
            topology.loop_prevention.separator
            if topology.loop_prevention.mode == "prefix"
            else None
        )
        self._decisions: dict[tuple[str, bytes, bytes, bytes], Route | _Forward] = {}
        self.foreign_seen = 0
        """Distinct foreign provenances (origin, path, src without offset) treated as local."""
        self._unmarked_before = moment_ms(topology.loop_prevention.unmarked_copies_before)
        self._unmarked_topics: set[str] = set()
        self.unmarked_seen = 0
        """Records with ``aa-*`` headers outside mirror-written batches, copied as local."""

    # -- topics -----------------------------------------------------------------------------

    def subscription(self) -> str:
        """Regex of the source topics to consume (a superset of the copied ones)."""
        return self.topics.subscription()

    def target_topic(self, source_topic: str) -> str | None:
        """The topic's name in the target DC, or ``None`` when this flow does not copy it."""
        return self.topics.decide(source_topic).target

    def topic_decision(self, source_topic: str) -> TopicDecision:
        """The cached topic decision, with the reason when the topic is not copied."""
        return self.topics.decide(source_topic)

    def forwards_mirrored(self) -> bool:
        """Whether this flow ever forwards a record a mirror wrote into its source DC.

        False in headers mode when no other DC's route tree uses this flow (a full mesh: each
        flow forwards only its source's own records); the flow may then skip batches the
        mirror wrote without reading their records (:mod:`aa.kafka.fetched`). Prefix mode
        decides by topic, so it answers True (no batch skipping there).
        """
        if not self._headers_mode:
            return True
        return any(
            self.routes.forwards(origin, self.source, self.target)
            for origin in self._dcs
            if origin != self.source
        )

    # -- records ----------------------------------------------------------------------------

    def route(self, topic: str, partition: int, offset: int, headers: Headers) -> Route:
        """The headers to write in the target, or :class:`Skip` / :class:`Malformed`."""
        if self.topics.decide(topic).target is None:
            return SKIP_NOT_ROUTED
        for key, _ in headers:
            if key.startswith(PREFIX):
                return self._with_provenance(topic, partition, offset, headers)
        return self.local_stamp(topic, partition).headers(offset, headers)

    def local_stamp(self, topic: str, partition: int) -> LocalStamp:
        """The headers every record of ``topic``/``partition`` without ``aa-*`` headers gets
        when the topic is copied (what :meth:`route_batch` appends to its own headers)."""
        stamp = self._stamps.get((topic, partition))
        if stamp is None:
            stamp = self._stamps[(topic, partition)] = LocalStamp(
                self.source, self.target, topic, partition
            )
        return stamp

    def route_batch(
        self,
        topic: str,
        partition: int,
        records: Sequence[RecordLike],
        believed: Callable[[int], bool] | None = None,
    ) -> list[Route]:
        """:meth:`route` for every record of one fetched partition batch, in order.

        ``believed``: whether the record at an offset is in a batch a mirror wrote into the
        source DC (:class:`aa.kafka.switch.MirrorRanges`); elsewhere its ``aa-*`` headers are
        an application's and it is local — unless it is older than
        ``loop_prevention.unmarked_copies_before`` (written before aa marked its batches).
        ``None`` believes every record's headers (their shape is still checked)."""
        if self.topics.decide(topic).target is None:
            return [SKIP_NOT_ROUTED] * len(records)
        stamp = self.local_stamp(topic, partition)
        out: list[Route] = []
        append = out.append
        local = stamp.headers
        before = self._unmarked_before
        for r in records:
            headers = r.headers
            for key, _ in headers:
                if key.startswith(PREFIX):
                    if believed is None or believed(r.offset) or 0 <= r.timestamp < before:
                        append(self._with_provenance(topic, partition, r.offset, headers))
                    else:
                        append(self._unmarked(topic, partition, r.offset, headers))
                    break
            else:
                append(local(r.offset, headers))
        return out

    def _unmarked(self, topic: str, partition: int, offset: int, headers: Headers) -> Route:
        """A record with ``aa-*`` headers outside a mirror's batch: an application wrote it
        (re-producing a copy, say); copied as a new local event. Logged once per topic."""
        if topic not in self._unmarked_topics and len(self._unmarked_topics) < CACHE_LIMIT:
            self._unmarked_topics.add(topic)
            _log.info(
                "provenance_not_believed",
                flow=self.flow.name,
                topic=topic,
                partition=partition,
                offset=offset,
                detail=(
                    f"{topic} in {self.source} holds a record with aa-* headers that no mirror "
                    "wrote (not in a batch a mirror marked): an application's record, copied "
                    "with fresh provenance like any record written there"
                ),
            )
        self.unmarked_seen += 1
        return self._local(topic, partition, offset, headers)

    def _with_provenance(self, topic: str, partition: int, offset: int, headers: Headers) -> Route:
        origin = path = src = None
        has_src = repeated = False
        for key, value in headers:
            if key == ORIGIN:
                repeated |= origin is not None
                origin = value if value is not None else b"\x00"  # None is malformed too
            elif key == PATH:
                repeated |= path is not None
                path = value if value is not None else b"\x00"
            elif key == SRC:
                repeated |= has_src
                has_src, src = True, value
        if repeated or origin is None or path is None or src is None:
            return self._local(topic, partition, offset, headers)  # not a mirror's copy
        if len(origin) > 32 or len(path) > MAX_PATH_BYTES or len(src) > MAX_SRC_BYTES:
            return self._local(topic, partition, offset, headers)  # oversized: never cached
        src_at, slash, src_offset = src.rpartition(b"/")
        if not slash or not src_offset.isdigit() or len(src_offset) > 19:
            return self._local(topic, partition, offset, headers)
        cache_key = (topic, origin, path, src_at)
        decision = self._decisions.get(cache_key)
        if decision is None:
            decision = self._decide(topic, origin, path, src_at)
            if len(self._decisions) >= CACHE_LIMIT:
                self._decisions.clear()
            self._decisions[cache_key] = decision
        if decision is _LOCAL:
            return self._local(topic, partition, offset, headers)
        if not isinstance(decision, tuple):
            return decision
        return [*strip(headers), decision[0], decision[1], (SRC, src)]

    def _local(self, topic: str, partition: int, offset: int, headers: Headers) -> Route:
        """A record written in the source DC by an application, stale ``aa-*`` headers and all."""
        return self.local_stamp(topic, partition).headers(offset, strip(headers))

    def _decide(self, topic: str, origin: bytes, path: bytes, src_at: bytes) -> Route | _Forward:
        raw = [(ORIGIN, origin), (PATH, path), (SRC, src_at + b"/0")]
        p = mirrored_into(raw, self.source, topic, self._separator)
        if p is None:
            self.foreign_seen += 1
            _log.info(
                "foreign_provenance_local",
                flow=self.flow.name,
                topic=topic,
                origin=origin[:64],
                path=path[:128],
                src=src_at[:128],
            )
            return _LOCAL
        if p.looped:
            return SKIP_LOOPED
        if p.has_visited(self.target):
            return SKIP_VISITED
        if self._headers_mode:
            if p.origin not in self._dcs:
                return SKIP_UNKNOWN_ORIGIN
            if not self.routes.forwards(p.origin, self.source, self.target):
                return SKIP_NOT_ON_ROUTE
        assert p.origin is not None  # mirrored_into returns complete provenance only
        new_path = (*p.path, self.target)
        return ((ORIGIN, p.origin.encode()), (PATH, ",".join(new_path).encode()))


def routers_for(topology: Topology, dc: str) -> list[FlowRouter]:
    """One router per inbound flow of ``dc`` (what ``aa run --dc`` runs), sharing one route
    table."""
    routes = RouteTable(topology.dc_names, topology.flows)
    return [FlowRouter(topology, f, routes=routes) for f in topology.inbound(dc)]
