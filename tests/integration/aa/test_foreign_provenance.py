"""Copied, partial and garbled ``aa-*`` headers on a real flow (issue 10 item 2): the records
are local to the DC they were written in, copied with fresh provenance, and the flow — under
the default ``on_error: fail`` — never stops for them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aa.config import read_yaml
from aa.mirror.build import build_flows
from aa.provenance import BATCH
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import committed, running_flow

pytestmark = pytest.mark.integration


async def test_records_with_copied_or_partial_provenance_are_copied_and_the_flow_goes_on(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("foreign"), partitions=1)
    odd: list[list[tuple[str, bytes]]] = [
        [],  # an ordinary local record
        [("aa-src", b"LON/users/0/1")],  # only aa-src: stopped the flow forever before
        [
            ("aa-origin", b"NYC"),
            ("aa-path", b"NYC,SF"),
            ("aa-src", b"NYC/other/0/7"),
        ],  # re-produced
        [("aa-origin", b"\xff\xfe")],  # not UTF-8
        [("aa-origin", b"SF"), ("aa-origin", b"SF")],  # repeated
        # as a mirror would write it into SF, but an application's batch: local too (issue 29,
        # item 3; it was skipped as NYC's own)
        [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", f"NYC/{topic}/0/1".encode())],
    ]
    await produce(
        sf, topic, [Rec(b"k", f"v{i}".encode(), h, partition=0) for i, h in enumerate(odd)]
    )
    t = read_yaml(
        f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  NYC: {{bootstrap: '{nyc}'}}\n"
        f"flows: [SF->NYC]\ntopics: ['{topic}']\noffset_sync: {{enabled: false}}\n"
    )
    [(settings, router)] = build_flows(t, t.inbound("NYC"))
    async with running_flow(settings, router) as (_flow, task):
        copied = await consume_all(nyc, topic, count=6, settle=1.0)
        await eventually(
            lambda: _equals(committed(sf, settings.group_id, topic, 1), {0: 6}),
            timeout=60,
            message="source offset 6 committed",
        )
        assert not task.done()  # still running: nothing stopped it
    assert [r.value for r in copied] == [b"v0", b"v1", b"v2", b"v3", b"v4", b"v5"]
    for i, r in enumerate(copied):
        # aa-ts (when copied) and aa-batch (the mirror's mark on a batch's first record) aside
        aa = [(k, v) for k, v in r.headers if k.startswith("aa-") and k not in {"aa-ts", BATCH}]
        assert aa == [
            ("aa-origin", b"SF"),
            ("aa-path", b"SF,NYC"),
            ("aa-src", f"SF/{topic}/0/{i}".encode()),
        ]


async def _equals(coro: object, want: object) -> bool:
    return await coro == want  # type: ignore[misc]


async def test_an_application_re_producing_a_mirrored_record_into_the_same_topic_is_copied_back(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    """SF->NYC copies a record; an application in NYC reads the copy and writes it again,
    headers and all, into the same topic; NYC->SF copies that record to SF as NYC's own
    event (issue 29, item 3: every flow skipped it as "SF's record, already there")."""
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("reproduced"), partitions=1)
    await create_topic(nyc, topic, partitions=1)
    await produce(sf, topic, [Rec(b"k", b"first", partition=0)])
    t = read_yaml(
        f"datacenters:\n  SF: {{bootstrap: '{sf}'}}\n  NYC: {{bootstrap: '{nyc}'}}\n"
        f"flows: full-mesh\ntopics: ['{topic}']\n"
        "heartbeats: {enabled: false}\ncheckpoints: {enabled: false}\n"
    )
    [(into_nyc, nyc_router)] = build_flows(t, t.inbound("NYC"))
    [(into_sf, sf_router)] = build_flows(t, t.inbound("SF"))
    async with running_flow(into_nyc, nyc_router), running_flow(into_sf, sf_router):
        [copy] = await consume_all(nyc, topic, count=1, settle=0.5)
        # the application: the copy's key, value and headers, written again in NYC
        headers = [(k, v) for k, v in copy.headers if k != BATCH]
        await produce(nyc, topic, [Rec(copy.key, b"again", headers, partition=0)])
        got = await consume_all(sf, topic, count=2, timeout=60, settle=1.0)
    assert [r.value for r in got] == [b"first", b"again"]
    again = dict(got[1].headers)
    assert again["aa-origin"] == b"NYC"
    assert again["aa-src"] == f"NYC/{topic}/0/1".encode()
