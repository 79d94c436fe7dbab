"""The topology config: frozen values, built and validated by :mod:`aa.config.load`.

One :class:`Topology` describes every DC, the flows between them, which topics are copied, how
loops are prevented, the delivery mode, tuning, and the settings of the later features (offset
syncs, checkpoints, heartbeats). Every DC and every mirror process must load the same topology:
the per-record forwarding decisions are derived from the flow graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from aa.config.kinds import (
    Choice,
    Filter,
    Password,
    Servers,
    Text,
)
from aa.config.registries import SchemaTranslation
from aa.config.schema import REQUIRED, section, setting
from aa.config.secret import Secret
from aa.config.sections import (
    DEFAULT_CONFIG_EXCLUDE,
    Checkpoints,
    ExactlyOnceOptions,
    Heartbeats,
    LoopPrevention,
    MetricsEndpoint,
    OffsetSyncs,
    OnError,
    PrefixStyle,
    TopicSync,
    Tuning,
)
from aa.config.topic_filter import TopicFilter

__all__ = [  # the sections and the filter are defined in their own modules, part of the model
    "DEFAULT_CONFIG_EXCLUDE",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "Checkpoints",
    "Datacenter",
    "Delivery",
    "Direction",
    "ExactlyOnceOptions",
    "Flow",
    "FlowGraph",
    "Heartbeats",
    "LoopPrevention",
    "MetricsEndpoint",
    "OffsetSyncs",
    "OnError",
    "PrefixStyle",
    "SaslMechanism",
    "SchemaTranslation",
    "SecurityProtocol",
    "TopicFilter",
    "TopicSync",
    "Topology",
    "TopologyKind",
    "Tuning",
]

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal[
    "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"
]
Delivery = Literal["at-least-once", "exactly-once"]
TopologyKind = Literal["full-mesh", "hub-and-spoke", "list"]
Direction = Literal["inbound", "outbound", "both"]

DELIVERIES: tuple[str, ...] = get_args(Delivery)

SECURITY_PROTOCOLS: tuple[SecurityProtocol, ...] = get_args(SecurityProtocol)
SASL_MECHANISMS: tuple[SaslMechanism, ...] = get_args(SaslMechanism)


@section(applies="datacenter", groups=("ssl", "sasl"))
@dataclass(frozen=True, slots=True)
class Datacenter:
    """One DC's Kafka cluster and the client settings to reach it (docs/configuration.md has a
    section per mechanism; :mod:`aa.config.security` checks which settings go together)."""

    name: str
    bootstrap: str = setting(REQUIRED, Servers(), mm2=("A.bootstrap.servers",))
    """the cluster's bootstrap servers"""
    security_protocol: SecurityProtocol = setting(
        "PLAINTEXT", Choice(SECURITY_PROTOCOLS), mm2=("[A.]security.protocol",)
    )
    """how clients connect"""
    ssl_cafile: str | None = setting(None, Text("PEM file"))
    """the CA(s) to trust (SSL / SASL_SSL only); none: the system's CAs"""
    ssl_certfile: str | None = setting(None, Text("PEM file"))
    """client certificate (may hold the key too), for brokers with `ssl.client.auth=required`"""
    ssl_keyfile: str | None = setting(None, Text("PEM file"))
    """private key (needs `certfile`), encrypted or not"""
    ssl_key_password: Secret | None = setting(None, Password(), mm2=("[A.]ssl.key.password",))
    """password of the encrypted private key (`keyfile`, or the key in `keystore`)"""
    ssl_truststore: str | None = setting(
        None, Text("JKS, PKCS12 or PEM file"), mm2=("[A.]ssl.truststore.location",)
    )
    """a Java truststore (instead of `cafile`), read as it is"""
    ssl_truststore_password: Secret | None = setting(
        None, Password(), mm2=("[A.]ssl.truststore.password",)
    )
    """checks the truststore's integrity (JKS, PKCS12)"""
    ssl_keystore: str | None = setting(
        None, Text("JKS, PKCS12 or PEM file"), mm2=("[A.]ssl.keystore.location",)
    )
    """a Java keystore with the client's key and certificate (instead of `certfile`)"""
    ssl_keystore_password: Secret | None = setting(
        None, Password(), mm2=("[A.]ssl.keystore.password",)
    )
    """the keystore's password (also the key's, unless `key_password` is given)"""
    sasl_mechanism: SaslMechanism | None = setting(
        None, Choice(SASL_MECHANISMS), mm2=("[A.]sasl.mechanism",)
    )
    """required with SASL_*"""
    sasl_username: str | None = setting(None, Text(), mm2=("[A.]sasl.jaas.config",))
    """PLAIN and SCRAM"""
    sasl_password: Secret | None = setting(None, Password(), mm2=("[A.]sasl.jaas.config",))
    """PLAIN and SCRAM"""
    sasl_token_provider: str | None = setting(None, Text("`module:factory`"))
    """OAUTHBEARER through your own code: a function giving the bearer token (see below)"""
    sasl_token_endpoint: str | None = setting(
        None, Text("http(s) URL"), mm2=("[A.]sasl.oauthbearer.token.endpoint.url",)
    )
    """OAUTHBEARER by OAuth client credentials: the identity provider's token endpoint"""
    sasl_client_id: str | None = setting(None, Text(), mm2=("[A.]sasl.jaas.config",))
    """OAUTHBEARER by client credentials"""
    sasl_client_secret: Secret | None = setting(None, Password(), mm2=("[A.]sasl.jaas.config",))
    """OAUTHBEARER by client credentials"""
    sasl_scope: str | None = setting(None, Text(), mm2=("[A.]sasl.jaas.config",))
    """OAUTHBEARER by client credentials, when the identity provider wants one"""
    sasl_kerberos_service_name: str = setting(
        "kafka", Text(), mm2=("[A.]sasl.kerberos.service.name",)
    )
    """GSSAPI: the brokers' Kerberos service (their principal is `service/host@REALM`)"""
    sasl_keytab: str | None = setting(None, Text("keytab file"), mm2=("[A.]sasl.jaas.config",))
    """GSSAPI: aa's keytab (none: the ticket cache `kinit` filled)"""
    sasl_principal: str | None = setting(None, Text(), mm2=("[A.]sasl.jaas.config",))
    """GSSAPI with `keytab`: aa's principal in it"""


@dataclass(frozen=True, slots=True)
class Flow:
    """One ordered DC pair: records are copied from ``source`` to ``target``.

    ``topics`` overrides the topology's filter for this flow only (MM2's ``A->B.topics``);
    ``schemas``, when given, translates the schema ids of its registry-framed records.
    """

    source: str
    target: str
    topics: TopicFilter | None = None
    schemas: SchemaTranslation | None = None

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
class Topology:
    """The whole config. ``flows`` is sorted. ``graph`` (how the flows were written),
    ``source_file`` and ``ignored`` (keys of an MM2 file aa does not use) are informational and
    take no part in equality: two topologies with the same flows behave the same."""

    datacenters: tuple[Datacenter, ...]
    flows: tuple[Flow, ...]
    graph: FlowGraph = field(default=FlowGraph(), compare=False)
    topics: TopicFilter = setting(
        TopicFilter(),
        Filter(),
        mm2=("topics", "topics.exclude", "topics.blacklist"),
        applies="topology",
    )
    """which topics the flows copy (a flow's own `topics` overrides it)"""
    loop_prevention: LoopPrevention = field(default_factory=LoopPrevention)
    delivery: Delivery = setting(
        "at-least-once", Choice(DELIVERIES), mm2=("exactly.once.source.support",), flow="delivery"
    )
    """`exactly-once`: the copies and the source offsets commit in one transaction on the target"""
    exactly_once: ExactlyOnceOptions = field(default_factory=ExactlyOnceOptions)
    tuning: Tuning = field(default_factory=Tuning)
    topic_sync: TopicSync = field(default_factory=TopicSync)
    on_error: OnError = field(default_factory=OnError)
    metrics: MetricsEndpoint = field(default_factory=MetricsEndpoint)
    offset_sync: OffsetSyncs = field(default_factory=OffsetSyncs)
    checkpoints: Checkpoints = field(default_factory=Checkpoints)
    heartbeats: Heartbeats = field(default_factory=Heartbeats)
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
