"""From a topology to runnable flows: :class:`FlowSettings` plus a router per flow."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aa.config import Flow, Topology, client_kwargs, names
from aa.config.schema import definitions, value_at
from aa.errors import ConfigError
from aa.mirror.settings import FlowSettings
from aa.policy import FlowRouter, RouteTable

MIN_FLOW_BUDGET_MB = 4
"""A flow's smallest memory budget (the setting's own lower limit)."""

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
        schemas=flow.schemas,
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
    """The flows one process runs, each with its share of the process's memory budget."""
    routes = RouteTable(topology.dc_names, topology.flows)
    share = flow_budget_mb(topology.tuning.memory_budget_mb, len(flows))
    return [
        (
            replace(flow_settings(topology, f, env=env), memory_budget_mb=share),
            FlowRouter(topology, f, routes=routes),
        )
        for f in flows
    ]


def flow_budget_mb(process_mb: int, flows: int) -> int:
    """Each flow's share of ``tuning.memory_budget_mb`` (a process's), whole MiB; a clear
    error when a share would be under the 4 MiB a flow needs."""
    share = process_mb // max(flows, 1)
    if share < MIN_FLOW_BUDGET_MB:
        raise ConfigError(
            f"tuning.memory_budget_mb: {process_mb} MiB for the {flows} flows this process "
            f"runs is under {MIN_FLOW_BUDGET_MB} MiB each; set at least "
            f"{MIN_FLOW_BUDGET_MB * flows}, or run fewer flows per process (--flow A->B)"
        )
    return share
