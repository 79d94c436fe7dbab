"""Headers mode at batch speed on real brokers: in a full mesh, flow SF->LON skips the record
batches the NYC->SF mirror wrote into SF without reading their records, and still copies
exactly SF's own records, also a record an application re-produced with a copied batch mark
and the rest of its batch (the mark names the mirror's producer id, not the application's: the
record is SF's own, issue 29 item 3)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aa.config import read_yaml
from aa.mirror.build import build_flows
from aa.observe.metrics import Metrics
from aa.provenance import BATCH
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import running_flow

pytestmark = pytest.mark.integration


async def test_full_mesh_flow_skips_mirror_written_batches_and_copies_local_records(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc, lon = (dc_clusters[dc].bootstrap for dc in ("SF", "NYC", "LON"))
    topic = unique_name("batches")
    for b in (sf, nyc, lon):
        await create_topic(b, topic, partitions=2)
    t = read_yaml(
        f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  NYC: {{bootstrap: '{nyc}'}}\n"
        f"  LON: {{bootstrap: '{lon}'}}\nflows: full-mesh\ntopics: ['{topic}']\n"
        "offset_sync: {enabled: false}\n"
    )
    [nyc_sf] = [fr for fr in build_flows(t, t.inbound("SF")) if fr[0].source == "NYC"]
    [sf_lon] = [fr for fr in build_flows(t, t.inbound("LON")) if fr[0].source == "SF"]
    from_nyc = [Rec(b"k", f"n{i}".encode(), partition=i % 2) for i in range(40)]
    local = [Rec(b"k", f"s{i}".encode(), partition=i % 2) for i in range(30)]
    await produce(nyc, topic, from_nyc)
    async with running_flow(*nyc_sf):
        copies = await consume_all(sf, topic, count=len(from_nyc), timeout=90)
    marked = [r for r in copies if any(k == BATCH for k, _ in r.headers)]
    assert marked, "the mirror marks the first record of each batch it writes"
    await produce(sf, topic, local)
    # An application in SF re-produces a mirrored record with all its headers, mark included,
    # first in a batch of its own records. Its batch is the application's (another producer
    # id): the record and the ones after it are SF's own and are copied.
    resent = Rec(b"k", b"resent", headers=list(marked[0].headers), partition=0)
    after = [Rec(b"k", f"t{i}".encode(), partition=0) for i in range(5)]
    await produce(sf, topic, [resent, *after], enable_idempotence=True)
    want = sorted(r.value for r in [*local, resent, *after])
    metrics = Metrics()
    async with running_flow(*sf_lon, metrics=metrics):
        got = await consume_all(lon, topic, count=len(want), timeout=90, settle=1.0)

        def skipped() -> float:
            return sum(
                metrics.registry.get_sample_value(
                    "aa_records_skipped_total",
                    {"source": "SF", "target": "LON", "topic": topic, "reason": reason},
                )
                or 0.0
                for reason in ("mirror-batch", "not-on-route", "visited")
            )

        await eventually(lambda: skipped() >= len(from_nyc), timeout=60, message="skips")
        by_batch = metrics.registry.get_sample_value(
            "aa_records_skipped_total",
            {"source": "SF", "target": "LON", "topic": topic, "reason": "mirror-batch"},
        )
    assert sorted(r.value for r in got) == want
    assert skipped() == len(from_nyc)  # the re-produced copy is not skipped
    assert by_batch == len(from_nyc)  # every NYC copy skipped by batch, none read one by one
    for r in got:
        aa = {k: v for k, v in r.headers if k.startswith("aa-")}
        assert aa["aa-origin"] == b"SF"
        assert list(aa).count(BATCH) <= 1
        if BATCH in aa:
            assert aa[BATCH].startswith(b"LON/")  # LON's mirror mark, never SF's copied one
