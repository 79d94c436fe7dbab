"""The sections of the topology config whose every field is a setting (see
:mod:`aa.config.schema`): each field declares its name, type, default, kind, doc, MM2 keys, where
it applies and the per-flow attribute it feeds, once. Re-exported by :mod:`aa.config.model`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from aa.config import names
from aa.config.kinds import (
    Boolean,
    Choice,
    Filter,
    Integer,
    MaybeText,
    Moment,
    Number,
    Rate,
    ReplicationFactor,
    Separator,
    StrList,
    Template,
    Text,
)
from aa.config.schema import section, setting
from aa.config.topic_filter import TopicFilter


class FlowEnds(Protocol):
    """A flow's two DCs (:class:`aa.config.model.Flow`; not imported: model imports this)."""

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...


LoopMode = Literal["headers", "prefix"]
PrefixStyle = Literal["rename", "book"]
Compression = Literal["source", "none", "gzip", "snappy", "lz4", "zstd"]
ErrorAction = Literal["fail", "dead-letter"]
HeadersTopicSync = Literal["create-only", "sync"]

LOOP_MODES: tuple[str, ...] = get_args(LoopMode)
PREFIX_STYLES: tuple[str, ...] = get_args(PrefixStyle)
COMPRESSIONS: tuple[str, ...] = get_args(Compression)
ERROR_ACTIONS: tuple[str, ...] = get_args(ErrorAction)
HEADERS_TOPIC_SYNCS: tuple[str, ...] = get_args(HeadersTopicSync)

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


@section(applies="topology")
@dataclass(frozen=True, slots=True)
class LoopPrevention:
    """``headers``: same topic names everywhere, provenance headers stop loops. ``prefix``: the
    owning DC's name is in the topic name (``SF.users``); ``rename`` turns ``users`` in SF into
    ``SF.users`` elsewhere (MM2's DefaultReplicationPolicy), ``book`` copies ``SF.users`` as is
    (applications write the prefixed name in their own DC)."""

    mode: LoopMode = setting(
        "headers",
        Choice(LOOP_MODES),
        mm2=("replication.policy.class",),
        shorthand=True,
        required=True,
    )
    """how loops are prevented (see below)"""
    separator: str = setting(".", Separator(), mm2=("replication.policy.separator",))
    """the text between DC name and topic in prefix mode"""
    style: PrefixStyle = setting("rename", Choice(PREFIX_STYLES))
    """`rename` (MM2 style: `users` in SF becomes `SF.users` elsewhere) or `book` (applications
    write `SF.users` in SF; copied under the same name)"""
    unmarked_copies_before: str = setting("2026-11-24T00:00:00Z", Moment())
    """`aa-*` headers count only on records in batches a mirror wrote into the DC they are read
    from (each such batch carries the mirror's `aa-batch` mark); on any other record they are
    an application's, and the record is copied as a new local event. Records older than this
    (by CreateTime) in unmarked batches are still judged by their headers: aa marks its
    batches since 2026-11-24, so copies written before that by an older aa are not copied a
    second time when a new flow or a rewind reads them. Set it to the time every `aa run` was
    upgraded if that was later"""


@section(feeds_flow=True)
@dataclass(frozen=True, slots=True)
class Tuning:
    """Client and pipeline sizes of one flow."""

    fetch_max_bytes: int = setting(16 * 1024 * 1024, Integer(lo=1024))
    """consumer `fetch_max_bytes`"""
    max_partition_fetch_bytes: int = setting(1024 * 1024, Integer(lo=1024))
    """consumer `max_partition_fetch_bytes`"""
    fetch_max_wait_ms: int = setting(25, Integer(lo=0))
    """consumer `fetch_max_wait_ms`: how long the source broker may hold a fetch until
    `fetch_min_bytes` are there; at low rates fewer, fuller fetches (each costs the flow a fetch, a
    produce request and offset syncs, whatever it holds) for at most this much added latency; 0:
    answer at once"""
    fetch_min_bytes: int = setting(256 * 1024, Integer(lo=1))
    """consumer `fetch_min_bytes`, lowered to the per-partition fetch size (so a lagging partition
    never waits for it)"""
    max_poll_records: int = setting(2000, Integer(lo=1))
    """records per `getmany`"""
    memory_budget_mb: int = setting(64, Integer(lo=4), applies="process")
    """MiB one `aa run` process may hold in fetched and not yet acknowledged data, however far its
    flows lag, shared evenly by the flows it runs (`--dc`: the DC's inbound flows, 32 MiB each for
    two; `--flow`: all of it), at least 4 MiB each. Within a flow's share: fetched data (in flight
    or not yet read) at most 1/4, split across the flow's assigned partitions in whole source
    batches; the response being parsed 1/4; record bytes between fetch and acknowledgement at most
    1/4, held twice; `fetch_max_bytes` and `max_partition_fetch_bytes` are lowered to fit (see
    docs/operations.md, memory)"""
    batch_size: int = setting(512 * 1024, Integer(lo=1024))
    """producer `max_batch_size` in bytes"""
    linger_ms: int = setting(0, Integer(lo=0))
    """producer `linger_ms`, for offset syncs and dead letters; the mirror's own batches are
    complete when handed over and leave at once"""
    compression: Compression = setting(
        "source", Choice(COMPRESSIONS), to_flow=lambda v: None if v == "none" else v
    )
    """the codec of the copies' batches: `source` keeps each source partition's own (a topic takes
    about the same space in every DC); a codec name writes every copy with it; `none`
    uncompressed"""
    max_in_flight: int = setting(4, Integer(lo=1), flow="max_inflight_batches")
    """fetched batches between fetch and commit: the backpressure bound in count (records held per
    flow ≤ max_in_flight × max_poll_records); `memory_budget_mb` bounds their bytes"""
    max_bytes_per_s: float = setting(0.0, Rate())
    """the flow's rate limit in bytes per second of records fetched from the source (key +
    value, as fetched), over each second; `0`: none. `10MB` and `512KiB` are read as bytes. A
    reload applies a new value at once, without restarting the flow; `aa limit` overrides it
    live (docs/operations.md, rate limits)"""
    commit_interval_s: float = setting(1.0, Number())
    """how often settled source offsets are committed while copying (an idle flow's last ones
    within this long after they settled; always at a rebalance and at stop); exactly-once: how
    often a transaction commits"""
    request_timeout_ms: int = setting(30_000, Integer(lo=1000))
    """client request timeout"""


@dataclass(frozen=True, slots=True)
class TopicSync:
    """Create missing target topics and keep partition counts and configs in step."""

    enabled: bool = setting(True, Boolean(), mm2=("sync.topic.configs.enabled",), flow="topic_sync")
    """create missing target topics (source partition count and configs), grow partitions, keep
    configs in step"""
    interval_s: float = setting(
        30.0, Number(), mm2=("refresh.topics.interval.seconds",), flow="topic_sync_interval_s"
    )
    """how often (also how soon new matching topics are seen)"""
    config_exclude: tuple[str, ...] = setting(
        DEFAULT_CONFIG_EXCLUDE,
        StrList(),
        mm2=("config.properties.exclude", "config.properties.blacklist"),
        flow="config_exclude",
        to_flow=frozenset,
    )
    """topic configs never copied (the default is MM2's)"""
    replication_factor: int = setting(
        -1, ReplicationFactor(), mm2=("replication.factor",), flow="replication_factor"
    )
    """replicas of every topic aa creates in a DC (copies, dead letters, its own internal topics:
    offset syncs, checkpoints, exactly-once offsets, heartbeats); -1: the cluster's
    `default.replication.factor` (the broker decides, KIP-464)"""
    headers_mode: HeadersTopicSync = setting("create-only", Choice(HEADERS_TOPIC_SYNCS))
    """headers mode only. `create-only`: the target DC owns its same-named topic — topic sync
    creates it when missing (source partitions and configs) and then leaves its configs alone,
    logging each difference once as `topic_mismatch`; `sync`: make its configs like the source's
    (with two sources that differ, their configs flip at every sync). Prefix mode always syncs its
    replicas. In both modes a target with fewer partitions than its source is grown to the
    source's count (partition counts are the topology's; partitions only ever grow)"""


@section(feeds_flow=True)
@dataclass(frozen=True, slots=True)
class OnError:
    """What a flow does with a record it cannot copy (malformed ``aa-*`` headers, too large):
    ``fail`` stops the flow without committing past it; ``dead-letter`` writes it (or a
    reference to it) to ``dead_letter_topic`` in the target and goes on."""

    action: ErrorAction = setting(
        "fail", Choice(ERROR_ACTIONS), flow="on_error", shorthand=True, required=True
    )
    """`fail`: stop the flow with one message; `dead-letter`: write the record (or a reference to
    it) to the dead-letter topic and go on"""
    dead_letter_topic: str = setting(names.DEAD_LETTER_TOPIC, Template())
    """where dead letters go, in the target DC"""

    def dead_letter_for(self, flow: FlowEnds) -> str:
        return names.for_flow(self.dead_letter_topic, flow.source, flow.target)


@section(applies="process")
@dataclass(frozen=True, slots=True)
class MetricsEndpoint:
    """Where ``aa run`` serves Prometheus ``/metrics`` and ``/healthz``."""

    host: str = setting("127.0.0.1", Text("host name or address"))
    """address to bind"""
    port: int = setting(9464, Integer(lo=0, hi=65535))
    """port (0 picks a free one)"""
    tls_certfile: str | None = setting(None, MaybeText("PEM file"))
    """serve HTTPS with this certificate (the file may hold the key too)"""
    tls_keyfile: str | None = setting(None, MaybeText("PEM file"))
    """the certificate's private key, when not in `tls_certfile`"""
    tls_client_cafile: str | None = setting(None, MaybeText("PEM file"))
    """with `tls_certfile`: mutual TLS, every client must present a certificate these CAs
    signed, and such a client may make the admin API's writing calls without the token"""
    lag_interval_s: float = setting(10.0, Number())
    """how often `aa run` reads committed lag for `aa_committed_lag_*`; a read without an answer
    after the interval + 5 s fails and is counted in
    `aa_background_task_failures_total{task="lag:<flow>"}`
    """


@dataclass(frozen=True, slots=True)
class ExactlyOnceOptions:
    """How the processes of an exactly-once flow share it (``delivery: exactly-once``)."""

    partition_sets: int = setting(1, Integer(lo=1, hi=1024), flow="partition_sets")
    """the flow's source partitions are split in this many sets, each copied in transactions of
    its own (transactional id `aa.eos.<source>.<target>.<k>-of-<n>`); the flow's group gives each
    process whole sets, so up to this many processes share the flow. `1`: one process copies
    the flow and a second fences it; set it to the most processes you will run, the same in
    every process of the flow"""


@dataclass(frozen=True, slots=True)
class OffsetSyncs:
    """Offset syncs (source offset -> target offset) written by each flow (issue 7)."""

    enabled: bool = setting(
        True, Boolean(), mm2=("emit.offset-syncs.enabled",), flow="offset_syncs"
    )
    """each flow writes source→target offset syncs"""
    topic: str = setting(names.OFFSET_SYNCS_TOPIC, Template(), flow="offset_sync_topic")
    """where a flow writes them, in its target DC"""


@section(applies="process")
@dataclass(frozen=True, slots=True)
class Checkpoints:
    """Consumer-group checkpoints translated into the other DCs (issue 7). ``apply`` also moves
    the target group's offsets when that group is not active there."""

    enabled: bool = setting(True, Boolean(), mm2=("emit.checkpoints.enabled",))
    """translate consumer-group offsets into the other DCs"""
    groups: TopicFilter = setting(
        TopicFilter((".*",), DEFAULT_GROUP_EXCLUDE),
        Filter(DEFAULT_GROUP_EXCLUDE),
        mm2=("groups", "groups.exclude", "groups.blacklist"),
    )
    """which groups (same shape as `topics`; a list is the include list and keeps the default
    excludes)"""
    interval_s: float = setting(60.0, Number(), mm2=("emit.checkpoints.interval.seconds",))
    """how often"""
    apply: bool = setting(False, Boolean(), mm2=("sync.group.offsets.enabled",))
    """also move the target group's offsets when the group is not active there"""
    topic: str = setting(names.CHECKPOINTS_TOPIC, Template())
    """where checkpoints go"""


@section(applies="process")
@dataclass(frozen=True, slots=True)
class Heartbeats:
    """Each DC writes heartbeats to ``topic`` in its own cluster; they are mirrored like data."""

    enabled: bool = setting(True, Boolean(), mm2=("emit.heartbeats.enabled",))
    """each DC writes heartbeats into its own cluster; mirrored like data"""
    interval_s: float = setting(1.0, Number(), mm2=("emit.heartbeats.interval.seconds",))
    """how often"""
    topic: str = setting("heartbeats", Template(()), applies="topology")
    """the topic (prefixed like any topic in prefix mode)"""
