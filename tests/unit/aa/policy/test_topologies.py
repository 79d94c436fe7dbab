"""Simulated replication in many topologies: driving every flow with FlowRouter decisions, in
any interleaving, every event reaches every DC its route tree reaches exactly once, never
crosses a link twice and never loops; in strongly connected topologies that is every DC."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aa import provenance as pv
from aa.config import Topology, read_yaml
from aa.policy import FlowRouter, RouteTable

pytestmark = pytest.mark.unit

NAMES = ["SF", "NYC", "LON", "PAR", "TYO", "SYD"]
MODES = [
    "loop_prevention: headers\n",
    "loop_prevention: prefix\n",
    "loop_prevention: {mode: prefix, style: book}\n",
    "loop_prevention: {mode: prefix, separator: _, style: rename}\n",
]


def yaml_for(dcs: list[str], flows: str, mode: str) -> str:
    lines = ["datacenters:"] + [f"  {d}: '127.0.0.1:{9000 + i}'" for i, d in enumerate(dcs)]
    return "\n".join(lines) + f"\nflows: {flows}\ntopics: [users]\n" + mode


@st.composite
def topologies(draw: st.DrawFn) -> tuple[Topology, bool]:
    """A topology and whether its flow graph is strongly connected (so every DC gets all)."""
    n = draw(st.integers(2, 6))
    dcs = NAMES[:n]
    kind = draw(
        st.sampled_from(["full-mesh", "hub-both", "hub-in", "hub-out", "chain", "ring", "random"])
    )
    mode = draw(st.sampled_from(MODES))
    strong = True
    if kind == "full-mesh":
        flows = "full-mesh"
    elif kind.startswith("hub"):
        hub = draw(st.sampled_from(dcs))
        direction = {"hub-both": "both", "hub-in": "inbound", "hub-out": "outbound"}[kind]
        flows = f"{{hub-and-spoke: {{hub: {hub}, direction: {direction}}}}}"
        strong = direction == "both"
    elif kind == "chain":
        pairs = [(a, b) for a, b in itertools.pairwise(dcs)]
        flows = str([f"{a}->{b}" for a, b in pairs] + [f"{b}->{a}" for a, b in pairs])
    elif kind == "ring":
        flows = str([f"{a}->{b}" for a, b in zip(dcs, dcs[1:] + dcs[:1], strict=True)])
        if n == 2:
            flows = str(["SF->NYC", "NYC->SF"])
    else:  # a ring (so strongly connected) plus random chords
        ring = {(a, b) for a, b in zip(dcs, dcs[1:] + dcs[:1], strict=True) if a != b}
        extra = draw(st.sets(st.tuples(st.sampled_from(dcs), st.sampled_from(dcs)), max_size=8))
        edges = sorted(ring | {(a, b) for a, b in extra if a != b})
        flows = str([f"{a}->{b}" for a, b in edges])
    return read_yaml(yaml_for(dcs, flows, mode)), strong


@dataclass
class World:
    topology: Topology
    logs: dict[str, dict[str, list[tuple[str, pv.Headers]]]] = field(default_factory=dict)
    cursors: Counter[tuple[str, str]] = field(default_factory=Counter)
    crossings: Counter[tuple[str, str]] = field(default_factory=Counter)
    written: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.logs = {dc: {} for dc in self.topology.dc_names}
        self.written = {dc: [] for dc in self.topology.dc_names}
        routes = RouteTable(self.topology.dc_names, self.topology.flows)
        self.routers = {
            f.name: FlowRouter(self.topology, f, routes=routes) for f in self.topology.flows
        }

    def app_write(self, dc: str) -> None:
        lp = self.topology.loop_prevention
        topic = (
            f"{dc}{lp.separator}users" if lp.mode == "prefix" and lp.style == "book" else "users"
        )
        value = f"{dc}:{len(self.written[dc])}"
        self.written[dc].append(value)
        self.logs[dc].setdefault(topic, []).append((value, [("app", value.encode())]))

    def step(self, flow: str, budget: int) -> int:
        """Copy up to ``budget`` records per topic along ``flow``; return how many were read."""
        router = self.routers[flow]
        src, dst = router.source, router.target
        read = 0
        for topic, log in sorted(self.logs[src].items()):
            target = router.target_topic(topic)
            if target is None:
                continue
            start = self.cursors[(flow, topic)]
            chunk = log[start : start + budget]
            for offset, (value, headers) in enumerate(chunk, start):
                route = router.route(topic, 0, offset, headers)
                if isinstance(route, list):
                    self.crossings[(value, flow)] += 1
                    assert self.crossings[(value, flow)] == 1, f"{value} crossed {flow} twice"
                    p = pv.read(route)
                    assert not p.looped, f"{value} looped: {p.path}"
                    assert p.path[-1] == dst
                    assert p.origin == value.split(":")[0]
                    self.logs[dst].setdefault(target, []).append((value, route))
                else:
                    assert not hasattr(route, "error"), route
            self.cursors[(flow, topic)] = start + len(chunk)
            read += len(chunk)
        return read

    def drain(self) -> None:
        limit = 10_000
        while any(self.step(f, 1000) for f in sorted(self.routers)):
            limit -= 1
            assert limit > 0, "no quiescence: records keep circulating"


@settings(max_examples=150, deadline=None)
@given(
    topo=topologies(),
    schedule=st.lists(st.tuples(st.integers(0, 100), st.integers(0, 3)), max_size=40),
)
def test_every_event_reaches_every_dc_exactly_once(
    topo: tuple[Topology, bool], schedule: list[tuple[int, int]]
) -> None:
    topology, strong = topo
    world = World(topology)
    dcs = topology.dc_names
    flows = sorted(world.routers)
    for dc in dcs:  # every DC writes at least once
        world.app_write(dc)
    for pick, budget in schedule:  # interleave application writes and partial copies
        if budget == 0:
            world.app_write(dcs[pick % len(dcs)])
        else:
            world.step(flows[pick % len(flows)], budget)
    world.drain()

    routes = RouteTable(dcs, topology.flows)
    for origin in dcs:
        reached = set(routes.tree(origin)) | {origin}
        if strong:
            assert reached == set(dcs)
        for dc in dcs:
            seen = Counter(v for log in world.logs[dc].values() for v, _ in log)
            for value in world.written[origin]:
                assert seen[value] == (1 if dc in reached else 0), (value, dc, seen[value])
        # each event crossed exactly the links of its origin's tree
        for value in world.written[origin]:
            crossed = {flow for (v, flow), n in world.crossings.items() if v == value}
            assert crossed == {
                f"{parent}->{child}" for child, parent in routes.tree(origin).items()
            }
