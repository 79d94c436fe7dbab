"""Reload without restart: which flows of a running process a new topology touches.

A flow is compared by what it runs with: its settings (with its DCs' client settings as
written, not the clients built from them), and what its router decides from (the DCs, the
flow graph, loop prevention, its topic filter, the heartbeats topic). Its rate limit is not
part of that: a new rate is applied to the running flow. Everything else that differs restarts
that flow alone (it drains and commits first, as at a stop); flows that compare equal are not
touched at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from aa.config import Flow, Topology
from aa.mirror.settings import FlowSettings


def signature(topology: Topology, flow: Flow, settings: FlowSettings) -> tuple[Any, ...]:
    """What decides how ``flow`` copies, but its rate limit: equal signatures, same copy."""
    bare = replace(settings, source_client={}, target_client={}, max_bytes_per_s=0.0)
    return (
        bare,
        topology.datacenter(flow.source),
        topology.datacenter(flow.target),
        topology.dc_names,
        tuple((f.source, f.target) for f in topology.flows),
        topology.loop_prevention,
        topology.topic_sync.headers_mode,
        topology.topics_for(flow),
        topology.heartbeats.topic,
    )


@dataclass(frozen=True, slots=True)
class ReloadPlan:
    """What a reload does to the flows of a process, by flow name."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    """Settings changed: stopped (drained, committed) and started again on the new ones."""
    retuned: tuple[str, ...] = ()
    """Only the rate limit changed: applied to the running flow."""
    unchanged: tuple[str, ...] = ()

    def show(self) -> dict[str, list[str]]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "restarted": list(self.restarted),
            "rate_changed": list(self.retuned),
            "unchanged": list(self.unchanged),
        }


def plan_reload(
    old: Mapping[str, tuple[tuple[Any, ...], float]],
    new: Mapping[str, tuple[tuple[Any, ...], float]],
) -> ReloadPlan:
    """Compare ``{flow: (signature, rate)}`` before and after."""
    both = sorted(old.keys() & new.keys())
    return ReloadPlan(
        added=tuple(sorted(new.keys() - old.keys())),
        removed=tuple(sorted(old.keys() - new.keys())),
        restarted=tuple(n for n in both if old[n][0] != new[n][0]),
        retuned=tuple(n for n in both if old[n][0] == new[n][0] and old[n][1] != new[n][1]),
        unchanged=tuple(n for n in both if old[n] == new[n]),
    )
