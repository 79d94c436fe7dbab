"""Loop-prevention policies: topic naming and selection, per-record decisions, fast paths."""

# ruff: noqa: E501  (decision tables read best one per line)
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aa import provenance as pv
from aa.config import Topology, read_yaml
from aa.policy import FlowRouter, PrefixPolicy, RouteTable, TopicSelector, is_internal
from aa.protocols import Route, Router, Skip

pytestmark = pytest.mark.unit

DCS = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""


def topo(extra: str = "") -> Topology:
    return read_yaml(DCS + extra)


def test_prefix_naming() -> None:
    rename = PrefixPolicy({"SF", "NYC"}, ".", "rename")
    assert rename.format_remote_topic("SF", "users") == "SF.users"
    assert rename.format_remote_topic("SF", "NYC.users") == "NYC.users"  # never NYC.NYC.users
    assert rename.topic_source("NYC.users") == "NYC"
    assert rename.topic_source("orders.eu") is None  # `orders` is not a DC
    assert rename.upstream_topic("NYC.users") == "users"
    assert rename.upstream_topic("users") is None
    assert rename.original_topic("SF.NYC.users") == "users"
    book = PrefixPolicy({"SF"}, "_", "book")
    assert book.format_remote_topic("SF", "SF_users") == "SF_users"


@pytest.mark.parametrize(
    "name",
    [
        "__consumer_offsets",
        "__transaction_state",
        ".hidden",
        "aa.dead-letter.SF",
        "aa.offset-syncs.SF.internal",
        "mm2-offset-syncs.B.internal",
        "A.checkpoints.internal",
        "connect-offsets-internal",
    ],
)
def test_internal_topics(name: str) -> None:
    assert is_internal(name)


@pytest.mark.parametrize("name", ["users", "heartbeats", "SF.users", "internal.stuff"])
def test_not_internal(name: str) -> None:
    assert not is_internal(name)


def decide(t: Topology, flow: str, topic: str) -> tuple[str | None, str]:
    d = TopicSelector(t, t.flow(flow)).decide(topic)
    return d.target, d.reason


def test_headers_mode_selection() -> None:
    t = topo("topics: {include: [users, 'orders\\..*'], exclude: ['orders\\.tmp']}\n")
    assert decide(t, "SF->NYC", "users") == ("users", "copy")
    assert decide(t, "SF->NYC", "orders.eu") == ("orders.eu", "copy")
    assert decide(t, "SF->NYC", "orders.tmp") == (None, "excluded")
    assert decide(t, "SF->NYC", "payments") == (None, "not-included")
    assert decide(t, "SF->NYC", "__consumer_offsets") == (None, "internal")
    assert decide(t, "SF->NYC", "heartbeats") == ("heartbeats", "copy")  # always, like MM2
    off = topo("topics: [users]\nheartbeats: {enabled: false}\n")
    assert decide(off, "SF->NYC", "heartbeats") == (None, "not-included")


def test_prefix_rename_selection_full_mesh() -> None:
    t = topo("topics: [users]\nloop_prevention: prefix\n")
    assert decide(t, "SF->NYC", "users") == ("SF.users", "copy")
    assert decide(t, "SF->NYC", "SF.users") == ("SF.users", "copy")
    assert decide(t, "SF->NYC", "NYC.users") == (None, "target-owned")
    assert decide(t, "SF->NYC", "LON.users") == (None, "not-on-route")  # LON sends it itself
    assert decide(t, "SF->NYC", "heartbeats") == ("SF.heartbeats", "copy")
    assert decide(t, "SF->NYC", "LON.heartbeats") == (None, "not-on-route")


def test_prefix_book_selection() -> None:
    t = topo("topics: [users]\nloop_prevention: {mode: prefix, style: book}\n")
    assert decide(t, "SF->NYC", "users") == (None, "no-dc-prefix")
    assert decide(t, "SF->NYC", "SF.users") == ("SF.users", "copy")
    assert decide(t, "SF->NYC", "NYC.users") == (None, "target-owned")


def test_prefix_through_a_hub_keeps_the_name() -> None:
    t = topo("flows: {hub-and-spoke: {hub: NYC}}\nloop_prevention: prefix\n")
    assert decide(t, "NYC->LON", "SF.users") == ("SF.users", "copy")
    assert decide(t, "NYC->LON", "users") == ("NYC.users", "copy")
    assert decide(t, "NYC->LON", "LON.users") == (None, "target-owned")
    assert decide(t, "SF->NYC", "LON.users") == (None, "not-on-route")


def test_route_trees() -> None:
    mesh = RouteTable(["SF", "NYC", "LON"], topo().flows)
    assert mesh.tree("SF") == {"NYC": "SF", "LON": "SF"}
    assert mesh.origins_carried("SF", "NYC") == ("SF",)
    assert mesh.unreachable() == {}
    hub = topo("flows: {hub-and-spoke: {hub: NYC, direction: both}}\n")
    assert RouteTable(hub.dc_names, hub.flows).tree("SF") == {"NYC": "SF", "LON": "NYC"}
    inbound = topo("flows: {hub-and-spoke: {hub: NYC, direction: inbound}}\n")
    assert RouteTable(inbound.dc_names, inbound.flows).unreachable() == {
        "NYC": ("LON", "SF"),
        "SF": ("LON",),
        "LON": ("SF",),
    }


# -- per-record decisions ---------------------------------------------------------------------


def reference(
    router: FlowRouter, topic: str, partition: int, offset: int, headers: pv.Headers
) -> Route:
    """The decision spelled out with the provenance module, no caches or fast paths."""
    if router.target_topic(topic) is None:
        return Skip("not-routed")
    p = pv.mirrored_into(headers, router.source, topic, router._separator)
    if p is not None:
        if p.looped:
            return Skip("looped")
        if p.has_visited(router.target):
            return Skip("visited")
        if router._headers_mode:
            if p.origin not in router.routes.dcs:
                return Skip("unknown-origin")
            if not router.routes.forwards(p.origin, router.source, router.target):
                return Skip("not-on-route")
    ref = pv.SourceRef(router.source, topic, partition, offset)
    return pv.with_provenance(headers, (p or pv.LOCAL).forwarded(router.source, router.target, ref))


def test_router_satisfies_the_mirror_protocol() -> None:
    t = topo()
    router: Router = FlowRouter(t, t.flow("SF->NYC"))
    assert router.source == "SF"
    assert router.target == "NYC"


def test_full_mesh_forwards_local_records_only() -> None:
    t = topo()
    r = FlowRouter(t, t.flow("SF->NYC"))
    fwd = r.route("users", 2, 41, [("trace", b"1")])
    assert fwd == [
        ("trace", b"1"),
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", b"SF/users/2/41"),
    ]
    remote = [("aa-origin", b"LON"), ("aa-path", b"LON,SF"), ("aa-src", b"LON/users/0/7")]
    assert r.route("users", 2, 42, remote) == Skip("not-on-route")
    back = [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", b"NYC/users/0/7")]
    assert r.route("users", 2, 43, back) == Skip("visited")
    assert r.route("__consumer_offsets", 0, 1, []) == Skip("not-routed")


def test_hub_forwards_spoke_records_once() -> None:
    t = topo("flows: {hub-and-spoke: {hub: NYC}}\n")
    r = FlowRouter(t, t.flow("NYC->LON"))
    from_sf = [
        ("k", b"v"),
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", b"SF/users/0/7"),
        ("aa-ts", b"1"),
    ]
    assert r.route("users", 0, 99, from_sf) == [
        ("k", b"v"),
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC,LON"),
        ("aa-src", b"SF/users/0/7"),
    ]
    assert FlowRouter(t, t.flow("NYC->SF")).route("users", 0, 99, from_sf) == Skip("visited")
    unknown = [("aa-origin", b"PAR"), ("aa-path", b"PAR,NYC"), ("aa-src", b"PAR/users/0/1")]
    assert r.route("users", 0, 1, unknown) == Skip("unknown-origin")


def test_prefix_mode_record_check_still_stops_loops() -> None:
    t = topo("flows: {hub-and-spoke: {hub: NYC}}\nloop_prevention: prefix\n")
    r = FlowRouter(t, t.flow("NYC->LON"))
    via_lon = [("aa-origin", b"SF"), ("aa-path", b"SF,LON,NYC"), ("aa-src", b"SF/users/0/1")]
    assert r.route("SF.users", 0, 1, via_lon) == Skip("visited")
    s = FlowRouter(t, t.flow("SF->NYC"))
    assert s.route("users", 0, 2, []) == [
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", b"SF/users/0/2"),
    ]


@dataclass
class Rec:
    offset: int
    headers: pv.Headers


dc_values = st.sampled_from([b"SF", b"NYC", b"LON", b"PAR", b"\xff", b"", b"S F"])
path_values = st.sampled_from(
    [b"SF", b"SF,NYC", b"NYC,SF", b"LON,NYC", b"LON", b"NYC,LON,SF", b"SF,SF", b"LON,,NYC", b"\xfe"]
)
src_values = st.sampled_from(
    [
        b"SF/users/0/1",
        b"LON/t/3/9",
        b"x",
        b"SF/users/-1/0",
        b"NYC/a/b/c",
        b"NYC/users/0/7",
        b"LON/users/1/+2",
        b"LON/NYC.users/0/5",
        b"NYC/users/0/1_0",
        b"SF/SF.users/2/3",
    ]
)
header = st.one_of(
    st.tuples(st.just("aa-origin"), dc_values),
    st.tuples(st.just("aa-path"), path_values),
    st.tuples(st.just("aa-src"), src_values),
    st.tuples(st.just("aa-ts"), st.just(b"123")),
    st.tuples(st.sampled_from(["trace", "ct", "aa"]), st.binary(max_size=4)),
)
topologies = st.sampled_from(
    [
        "",
        "flows: {hub-and-spoke: {hub: NYC}}\n",
        "flows: [SF->NYC, NYC->LON, LON->NYC, NYC->SF]\n",
        "loop_prevention: prefix\n",
    ]
)


@given(
    extra=topologies,
    flow=st.sampled_from(["SF->NYC", "NYC->LON", "NYC->SF"]),
    batch=st.lists(st.lists(header, max_size=5), min_size=1, max_size=12),
)
def test_router_equals_reference_and_batch_equals_single(
    extra: str, flow: str, batch: list[list[tuple[str, bytes]]]
) -> None:
    t = topo(extra)
    if flow not in {f.name for f in t.flows}:
        return
    r = FlowRouter(t, t.flow(flow))
    singles = [r.route("users", 3, i, h) for i, h in enumerate(batch)]
    expected = [reference(r, "users", 3, i, h) for i, h in enumerate(batch)]
    for got, want in zip(singles, expected, strict=True):
        assert got == want
    assert r.route_batch("users", 3, [Rec(i, h) for i, h in enumerate(batch)]) == singles


@given(
    topic=st.one_of(
        st.from_regex(
            r"(SF\.|NYC\.|LON\.|__|aa\.|mm2-)?(users|orders\.[a-z]{1,3}|heartbeats|x)(\.internal)?",
            fullmatch=True,
        ),
        st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True),
    ),
    extra=st.sampled_from(
        [
            "topics: {include: [users, 'orders\\..*'], exclude: ['orders\\.b.*']}\n",
            "topics: {include: [users, 'orders\\..*'], exclude: ['orders\\.b.*']}\nloop_prevention: prefix\n",
            "topics: [users, 'orders\\..*']\nloop_prevention: {mode: prefix, style: book}\n",
            "topics: ['.*']\nloop_prevention: prefix\nflows: {hub-and-spoke: {hub: NYC}}\n",
        ]
    ),
    flow=st.sampled_from(["SF->NYC", "NYC->LON"]),
)
def test_subscription_matches_every_copied_topic(topic: str, extra: str, flow: str) -> None:
    import re

    t = topo(extra)
    sel = TopicSelector(t, t.flow(flow))
    if sel.decide(topic).target is not None:
        assert re.fullmatch(sel.subscription(), topic)
        assert re.match(sel.subscription(), topic)  # how aiokafka applies a pattern
