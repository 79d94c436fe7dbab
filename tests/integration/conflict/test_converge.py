"""Three real DCs, the full-mesh mirror running, concurrent conflicting writes to 1,000 keys
from every DC for every resolver: after quiescence every DC's materialized state is
byte-identical. Plus the seed scenario end to end, and dead-lettering of bad records."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import pycrdt
import pytest

from aa.config import read_yaml
from aa.mirror.build import build_flows
from aa.mirror.supervisor import Supervisor
from aa.observe.metrics import Metrics
from conflict import EventWriter, Materializer, PatternConsumer, ResolverRegistry
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce

pytestmark = pytest.mark.integration

DCS = ("SF", "NYC", "LON")
KEYS = 1000
RESOLVERS = ("lww", "field-lww", "multi-value", "counter", "set", "document")


def _event_for(resolver: str, dc: str, i: int) -> tuple[str, Any]:
    if resolver == "counter":
        return "inc", {"by": i % 7 + 1}
    if resolver == "set":
        return "add", {"element": f"{dc}-{i % 5}"}
    if resolver == "document":
        doc: pycrdt.Doc[Any] = pycrdt.Doc()
        doc.get("root", type=pycrdt.Map)[dc] = i
        return "yjs", {"update": base64.b64encode(doc.get_update()).decode()}
    if resolver == "field-lww":
        return "patch", {"shared": f"{dc}:{i}", dc: i}
    return "set", {"book": f"{dc}-{i}"}


async def _mesh(
    clusters: dict[str, str], topics: list[str]
) -> tuple[Supervisor, asyncio.Task[None]]:
    yaml_text = "datacenters:\n" + "".join(
        f"  {dc}: {{bootstrap: '{b}'}}\n" for dc, b in clusters.items()
    )
    yaml_text += "flows: full-mesh\ntopics: [" + ", ".join(topics) + "]\n"
    yaml_text += "heartbeats: {enabled: false}\ncheckpoints: {enabled: false}\n"
    topology = read_yaml(yaml_text)
    flows = [f for dc in DCS for f in build_flows(topology, topology.inbound(dc))]
    sup = Supervisor(flows, Metrics(), shutdown_timeout_s=20)
    return sup, asyncio.create_task(sup.run(install_signals=False))


async def test_every_resolver_converges_byte_identical(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    clusters = {dc: dc_clusters[dc].bootstrap for dc in DCS}
    topics = {r: unique_name(r.replace("-", "")) for r in RESOLVERS}
    for b in clusters.values():
        for t in topics.values():
            await create_topic(b, t, partitions=3)
    sup, run = await _mesh(clusters, list(topics.values()))
    try:

        async def write(dc: str) -> None:
            for r, t in topics.items():
                async with EventWriter(dc, t, bootstrap_servers=clusters[dc]) as w:
                    for i in range(KEYS):
                        type_, payload = _event_for(r, dc, i)
                        await w.write(f"key-{i}", type_, payload, wait=False)
                    await w.flush()

        await asyncio.gather(*(write(dc) for dc in DCS))
        for dc in DCS:
            for t in topics.values():
                await consume_all(clusters[dc], t, count=KEYS * 3, timeout=120)
        registry = ResolverRegistry(by_topic={t: r for r, t in topics.items()})
        digests: dict[str, dict[str, bytes]] = {}
        for dc in DCS:
            digests[dc] = {}
            for r, t in topics.items():
                async with PatternConsumer(
                    f"^{t}$", Materializer(registry), bootstrap_servers=clusters[dc]
                ) as view:
                    assert await view.catch_up() == KEYS * 3
                    assert len(view.materializer) == KEYS
                    digests[dc][r] = view.materializer.state_bytes()
                    if r == "multi-value":
                        assert len(view.get("key-1")) == 3  # concurrent siblings from 3 DCs
                    if r == "counter":
                        assert view.get("key-1") == 3 * 2
    finally:
        sup.stop()
        await asyncio.wait_for(run, 30)
    for r in RESOLVERS:
        assert digests["SF"][r] == digests["NYC"][r] == digests["LON"][r], r


async def test_seed_scenario_and_dead_letter(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    clusters = {dc: dc_clusters[dc].bootstrap for dc in DCS}
    lww, mv = unique_name("orders"), unique_name("carts")
    for b in clusters.values():
        await create_topic(b, lww, partitions=1)
        await create_topic(b, mv, partitions=1)
    sup, run = await _mesh(clusters, [lww, mv])
    try:
        for topic in (lww, mv):
            async with (
                EventWriter("SF", topic, bootstrap_servers=clusters["SF"]) as sf,
                EventWriter("NYC", topic, bootstrap_servers=clusters["NYC"]) as nyc,
            ):
                await asyncio.gather(
                    sf.write("alice", "set", {"book": "A"}),
                    nyc.write("alice", "set", {"book": "B"}),
                )
        # garbage written by some other application into the LON topic
        await produce(clusters["LON"], lww, [Rec(b"bob", b'{"id": "trunc')])
        for dc in DCS:
            await consume_all(clusters[dc], mv, count=2, timeout=60)
            await consume_all(clusters[dc], lww, count=2, timeout=60)
        registry = ResolverRegistry(by_topic={lww: "lww", mv: "multi-value"})
        winners, siblings = set(), set()
        for dc in DCS:
            async with PatternConsumer(
                f"^({lww}|{mv})$",
                Materializer(registry),
                bootstrap_servers=clusters[dc],
                on_error="dead-letter",
                dead_letter_topic=f"{lww}.dlq",
            ) as view:
                await eventually(lambda v=view: v.catch_up(), timeout=30, message="catch up")
                state = view.get("alice")  # two topics, two resolvers: one value each
                winners.add(str(state["lww"]))
                siblings.add(str(sorted(v["value"]["book"] for v in state["multi-value"])))
        assert len(winners) == 1  # LWW: one winner, the same in every DC
        assert siblings == {"['A', 'B']"}  # multi-value: both books survive everywhere
    finally:
        sup.stop()
        await asyncio.wait_for(run, 30)
    dead = await consume_all(clusters["LON"], f"{lww}.dlq", count=1, timeout=30)
    assert dead[0].value == b'{"id": "trunc'
    assert dict(dead[0].headers)["conflict-error"].startswith(b"event.value: not JSON")
