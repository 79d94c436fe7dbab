"""What one run compares: the topics, DCs and flows of the read plan that the probe reached.

Driver-side values, computed once and handed to every stage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aa.config import Datacenter
from spark_reconcile.findings.presence import flag_dcs
from spark_reconcile.plan import ReadPlan
from spark_reconcile.probe import Probe


@dataclass(frozen=True, slots=True)
class RunScope:
    """The run's topics, DCs and flows (only DCs the probe reached take part)."""

    dcs: tuple[str, ...]
    """Every DC of the topology."""
    checked: list[str]
    """The DCs the probe reached, by name."""
    logical: list[str]
    """The logical topics read, by name."""
    physical: Mapping[str, str]
    """Physical topic -> logical topic."""
    resolvers: dict[str, str]
    """Event-sourced logical topic -> its resolver."""
    datacenters: Mapping[str, Datacenter]
    flows: Sequence[tuple[str, str, str, str]]
    """``(origin, ltopic, target, parent)``: each origin's records are expected in target,
    copied from parent (the origin's route tree)."""
    topic_dcs: Mapping[str, Sequence[str]]
    """Event-sourced logical topic -> the reached DCs that should hold it."""
    flag_dcs: tuple[str, ...]
    """The DCs presence's bitmasks name (:func:`~spark_reconcile.findings.presence.flag_dcs`)."""

    @property
    def expected(self) -> list[tuple[str, str, str]]:
        """``(origin, ltopic, target)`` of :attr:`flows`."""
        return [(o, t, d) for o, t, d, _ in self.flows]

    @classmethod
    def of(cls, plan: ReadPlan, probed: Probe) -> RunScope:
        ranges = probed.ranges
        all_ranges = probed.all_ranges()
        checked = sorted(ranges)
        logical = sorted({r.logical for r in all_ranges})
        resolvers = {t: res for t in logical if (res := plan.events.resolver_for(t)) is not None}
        flows = [
            (o, t, d, plan.routes.tree(o).get(d, o))
            for o, t, d in plan.expected(logical)
            if o in ranges and d in ranges
        ]
        topic_dcs = {
            t: [d for d in dcs if d in ranges]
            for t, dcs in plan.topic_dcs(logical).items()
            if t in resolvers
        }
        return cls(
            dcs=tuple(plan.dcs),
            checked=checked,
            logical=logical,
            physical={r.topic: r.logical for r in all_ranges},
            resolvers=resolvers,
            datacenters={dc: plan.datacenter(dc) for dc in plan.dcs},
            flows=flows,
            topic_dcs=topic_dcs,
            flag_dcs=flag_dcs(checked, [(o, t, d) for o, t, d, _ in flows]),
        )
