"""The topology config: frozen values, built and validated by :mod:`aa.config.load`.

One :class:`Topology` describes every DC, the flows between them, which topics are copied, how
loops are prevented, the delivery mode, tuning, and the settings of the later features (offset
syncs, checkpoints, heartbeats). Every DC and every mirror process must load the same topology:
the per-record forwarding decisions are derived from the flow graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from aa.config import names
from aa.config.secret import Secret

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
LoopMode = Literal["headers", "prefix"]
PrefixStyle = Literal["rename", "book"]
Delivery = Literal["at-least-once", "exactly-once"]
Compression = Literal["none", "gzip", "snappy", "lz4", "zstd"]
ErrorAction = Literal["fail", "dead-letter"]
TopologyKind = Literal["full-mesh", "hub-and-spoke", "list"]
Direction = Literal["inbound", "outbound", "both"]
HeadersTopicSync = Literal["create-only", "sync"]

SECURITY_PROTOCOLS: tuple[SecurityProtocol, ...] = (
    "PLAINTEXT",
    "SSL",
    "SASL_PLAINTEXT",
    "SASL_SSL",
)
SASL_MECHANISMS: tuple[SaslMechanism, ...] = (
    "PLAIN",
    "SCRAM-SHA-256",
    "SCRAM-SHA-512",
    "OAUTHBEARER",
)

DEFAULT_CONFIG_EXCLUDE: tuple[str, ...] = (
    # MirrorMaker 2's defaults: settings about the local cluster, not about the data.
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "min.insync.replicas",
)
DEFAULT_GROUP_EXCLUDE: tuple[str, ...] = ("console-consumer-.*", "connect-.*", "__.*")
"""MirrorMaker 2's default ``groups.exclude``."""


@dataclass(frozen=True, slots=True)
class Datacenter:
    """One DC's Kafka cluster and the client settings to reach it."""

    name: str
    bootstrap: str
    security_protocol: SecurityProtocol = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: Secret | None = None
    sasl_token_provider: str | None = None
    """OAUTHBEARER: ``module:factory`` giving the bearer token (see :mod:`aa.config.client`)."""


@dataclass(frozen=True, slots=True)
class TopicFilter:
    """Regexes matched against whole topic names (``fullmatch``, like MM2)."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Flow:
    """One ordered DC pair: records are copied from ``source`` to ``target``.

    ``topics`` overrides the topology's filter for this flow only (MM2's ``A->B.topics``).
    """

    source: str
    target: str
    topics: TopicFilter | None = None

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


@dataclass(frozen=True, slots=True)
class FlowGraph:
    """How the flows were described: ``full-mesh``, ``hub-and-spoke`` (with hub and direction)
    or an explicit ``list``; the resolved flows are in :attr:`Topology.flows`."""

    kind: TopologyKind = "full-mesh"
    hub: str | None = None
    direction: Direction | None = None


@dataclass(frozen=True, slots=True)
class LoopPrevention:
    """``headers``: same topic names everywhere, provenance headers stop loops. ``prefix``: the
    owning DC's name is in the topic name (``SF.users``); ``rename`` turns ``users`` in SF into
    ``SF.users`` elsewhere (MM2's DefaultReplicationPolicy), ``book`` copies ``SF.users`` as is
    (applications write the prefixed name in their own DC)."""

    mode: LoopMode = "headers"
    separator: str = "."
    style: PrefixStyle = "rename"


@dataclass(frozen=True, slots=True)
class Tuning:
    """Client and pipeline sizes of one flow."""

    fetch_max_bytes: int = 16 * 1024 * 1024
    max_partition_fetch_bytes: int = 1024 * 1024
    max_poll_records: int = 2000
    batch_size: int = 512 * 1024
    linger_ms: int = 0
    compression: Compression = "none"
    max_in_flight: int = 4
    """Fetched batches in flight between fetch and commit (the backpressure bound)."""
    commit_interval_s: float = 1.0
    request_timeout_ms: int = 30_000


@dataclass(frozen=True, slots=True)
class TopicSync:
    """Create missing target topics and keep partition counts and configs in step."""

    enabled: bool = True
    interval_s: float = 30.0
    config_exclude: tuple[str, ...] = DEFAULT_CONFIG_EXCLUDE
    headers_mode: HeadersTopicSync = "create-only"
    """Headers mode only: ``create-only`` — the target DC owns its same-named topic, so an
    existing one keeps its configs and partitions (mismatches are logged); ``sync`` — make it
    like the source's, as prefix mode does for its replicas."""


@dataclass(frozen=True, slots=True)
class OnError:
    """What a flow does with a record it cannot copy (malformed ``aa-*`` headers, too large):
    ``fail`` stops the flow without committing past it; ``dead-letter`` writes it (or a
    reference to it) to ``dead_letter_topic`` in the target and goes on."""

    action: ErrorAction = "fail"
    dead_letter_topic: str = names.DEAD_LETTER_TOPIC
    """Template; ``{source}`` and ``{target}`` are replaced by the flow's DCs."""

    def dead_letter_for(self, flow: Flow) -> str:
        return names.for_flow(self.dead_letter_topic, flow.source, flow.target)


@dataclass(frozen=True, slots=True)
class MetricsEndpoint:
    host: str = "127.0.0.1"
    port: int = 9464


@dataclass(frozen=True, slots=True)
class OffsetSyncs:
    """Offset syncs (source offset -> target offset) written by each flow (issue 7)."""

    enabled: bool = True
    topic: str = names.OFFSET_SYNCS_TOPIC


@dataclass(frozen=True, slots=True)
class Checkpoints:
    """Consumer-group checkpoints translated into the other DCs (issue 7). ``apply`` also moves
    the target group's offsets when that group is not active there."""

    enabled: bool = True
    groups: TopicFilter = TopicFilter((".*",), DEFAULT_GROUP_EXCLUDE)
    interval_s: float = 60.0
    apply: bool = False
    topic: str = names.CHECKPOINTS_TOPIC


@dataclass(frozen=True, slots=True)
class Heartbeats:
    """Each DC writes heartbeats to ``topic`` in its own cluster; they are mirrored like data."""

    enabled: bool = True
    interval_s: float = 1.0
    topic: str = "heartbeats"


@dataclass(frozen=True, slots=True)
class Topology:
    """The whole config. ``flows`` is sorted. ``graph`` (how the flows were written),
    ``source_file`` and ``ignored`` (keys of an MM2 file aa does not use) are informational and
    take no part in equality: two topologies with the same flows behave the same."""

    datacenters: tuple[Datacenter, ...]
    flows: tuple[Flow, ...]
    graph: FlowGraph = field(default=FlowGraph(), compare=False)
    topics: TopicFilter = TopicFilter()
    loop_prevention: LoopPrevention = LoopPrevention()
    delivery: Delivery = "at-least-once"
    tuning: Tuning = Tuning()
    topic_sync: TopicSync = TopicSync()
    on_error: OnError = OnError()
    metrics: MetricsEndpoint = MetricsEndpoint()
    offset_sync: OffsetSyncs = OffsetSyncs()
    checkpoints: Checkpoints = Checkpoints()
    heartbeats: Heartbeats = Heartbeats()
    source_file: str = field(default="", compare=False)
    ignored: tuple[str, ...] = field(default=(), compare=False)

    @property
    def dc_names(self) -> tuple[str, ...]:
        return tuple(dc.name for dc in self.datacenters)

    def datacenter(self, name: str) -> Datacenter:
        for dc in self.datacenters:
            if dc.name == name:
                return dc
        raise KeyError(f"unknown DC {name!r}; known: {', '.join(self.dc_names)}")

    def flow(self, name: str) -> Flow:
        """The flow named ``A->B``."""
        for f in self.flows:
            if f.name == name:
                return f
        raise KeyError(f"no flow {name!r}; flows: {', '.join(f.name for f in self.flows)}")

    def inbound(self, dc: str) -> tuple[Flow, ...]:
        """The flows into ``dc`` (what ``aa run --dc`` runs)."""
        return tuple(f for f in self.flows if f.target == dc)

    def outbound(self, dc: str) -> tuple[Flow, ...]:
        return tuple(f for f in self.flows if f.source == dc)

    def topics_for(self, flow: Flow) -> TopicFilter:
        return flow.topics if flow.topics is not None else self.topics
