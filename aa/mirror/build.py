"""From a topology to runnable flows: :class:`FlowSettings` plus a router per flow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aa.config import Flow, Topology, client_kwargs, names
from aa.config.schema import definitions, value_at
from aa.errors import ConfigError
from aa.mirror.settings import FlowSettings
from aa.policy import FlowRouter, RouteTable

PER_FLOW = tuple(d for d in definitions(Topology) if d.setting.flow)
"""The settings a flow is configured with (their ``flow=`` names a FlowSettings attribute)."""


def group_id(flow: Flow) -> str:
    """The consumer group every process running ``flow`` shares (it splits the partitions)."""
    return names.for_flow(names.MIRROR_GROUP, flow.source, flow.target)


def flow_settings(
    topology: Topology, flow: Flow, *, env: Mapping[str, str] | None = None
) -> FlowSettings:
    """The flow's settings: each one a definition in :mod:`aa.config.model` says it feeds
    (``flow=``), as the flow holds it (``to_flow``, templates filled in for this flow)."""
    values: dict[str, Any] = {}
    for d in PER_FLOW:
        assert d.setting.flow is not None
        value = d.setting.kind.for_flow(value_at(topology, d), flow.source, flow.target)
        values[d.setting.flow] = d.setting.to_flow(value) if d.setting.to_flow else value
    return FlowSettings(
        source=flow.source,
        target=flow.target,
        source_client=client_kwargs(topology.datacenter(flow.source), env=env),
        target_client=client_kwargs(topology.datacenter(flow.target), env=env),
        group_id=group_id(flow),
        **values,
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
