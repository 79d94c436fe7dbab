"""From a topology to runnable flows: :class:`FlowSettings` plus a router per flow."""

from __future__ import annotations

from collections.abc import Mapping

from aa.config import Flow, Topology, client_kwargs, names
from aa.errors import ConfigError
from aa.mirror.settings import FlowSettings
from aa.policy import FlowRouter, RouteTable


def group_id(flow: Flow) -> str:
    """The consumer group every process running ``flow`` shares (it splits the partitions)."""
    return names.for_flow(names.MIRROR_GROUP, flow.source, flow.target)


def flow_settings(
    topology: Topology, flow: Flow, *, env: Mapping[str, str] | None = None
) -> FlowSettings:
    t = topology.tuning
    return FlowSettings(
        source=flow.source,
        target=flow.target,
        source_client=client_kwargs(topology.datacenter(flow.source), env=env),
        target_client=client_kwargs(topology.datacenter(flow.target), env=env),
        group_id=group_id(flow),
        max_poll_records=t.max_poll_records,
        fetch_max_bytes=t.fetch_max_bytes,
        max_partition_fetch_bytes=t.max_partition_fetch_bytes,
        batch_size=t.batch_size,
        linger_ms=t.linger_ms,
        compression=None if t.compression == "none" else t.compression,
        max_inflight_batches=t.max_in_flight,
        commit_interval_s=t.commit_interval_s,
        request_timeout_ms=t.request_timeout_ms,
        on_error=topology.on_error.action,
        dead_letter_topic=topology.on_error.dead_letter_for(flow),
        topic_sync=topology.topic_sync.enabled,
        topic_sync_interval_s=topology.topic_sync.interval_s,
        config_exclude=frozenset(topology.topic_sync.config_exclude),
        delivery=topology.delivery,
        offset_syncs=topology.offset_sync.enabled,
        offset_sync_topic=topology.offset_sync.topic.format(source=flow.source, target=flow.target),
    )


def select_flows(
    topology: Topology, *, dc: str | None = None, flow: str | None = None
) -> tuple[Flow, ...]:
    """The flows of ``--dc`` (inbound) or ``--flow A->B``; errors name the choices."""
    if (dc is None) == (flow is None):
        raise ConfigError("give exactly one of --dc NAME or --flow A->B")
    if flow is not None:
        try:
            return (topology.flow(flow.replace(" ", "")),)
        except KeyError as exc:
            raise ConfigError(f"--flow: {exc.args[0]}") from None
    assert dc is not None
    if dc not in topology.dc_names:
        raise ConfigError(
            f"--dc: unknown DC {dc!r}; the topology has {', '.join(topology.dc_names)}"
        )
    flows = topology.inbound(dc)
    if not flows:
        raise ConfigError(f"--dc {dc}: no flow ends in {dc}; nothing to run there")
    return flows


def build_flows(
    topology: Topology, flows: tuple[Flow, ...], *, env: Mapping[str, str] | None = None
) -> list[tuple[FlowSettings, FlowRouter]]:
    routes = RouteTable(topology.dc_names, topology.flows)
    return [
        (flow_settings(topology, f, env=env), FlowRouter(topology, f, routes=routes)) for f in flows
    ]
