"""Records that carry copied, partial or foreign ``aa-*`` headers (issue 10 item 2).

Rule: provenance counts only when a mirror wrote the record into the DC it is read from —
``aa-origin``, ``aa-path`` and ``aa-src`` all present and well formed, the path starting at the
origin and ending at this DC, ``aa-src`` naming the origin and this record's topic (or its
prefixed name in prefix mode). Anything else was written here by an application: the record is
local, its stale ``aa-*`` headers are replaced, and it is forwarded like any local record.
No such record stops a flow."""

from __future__ import annotations

import pytest

from aa.config import Topology, read_yaml
from aa.policy import FlowRouter
from aa.protocols import Skip

pytestmark = pytest.mark.unit

DCS = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""


def topo(extra: str = "") -> Topology:
    return read_yaml(DCS + extra)


def local(
    topic: str, partition: int, offset: int, *app: tuple[str, bytes]
) -> list[tuple[str, bytes]]:
    """What flow SF->NYC writes for a record written in SF by an application."""
    return [
        *app,
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", f"SF/{topic}/{partition}/{offset}".encode()),
    ]


def test_record_reproduced_into_another_topic_with_copied_headers_is_local() -> None:
    # An application in SF read NYC's event (mirrored into SF's `users`) and wrote an enriched
    # version to `users-enriched`, headers and all: today it vanished from every outbound flow.
    t = topo()
    r = FlowRouter(t, t.flow("SF->NYC"))
    copied = [
        ("trace", b"1"),
        ("aa-origin", b"NYC"),
        ("aa-path", b"NYC,SF"),
        ("aa-src", b"NYC/users/0/7"),
        ("aa-ts", b"9"),
    ]
    assert r.route("users-enriched", 0, 3, copied) == local("users-enriched", 0, 3, ("trace", b"1"))


def test_record_copied_by_an_application_from_another_dc_is_local() -> None:
    # The path ends at LON, not SF: no mirror wrote this record into SF.
    t = topo()
    r = FlowRouter(t, t.flow("SF->NYC"))
    copied = [("aa-origin", b"NYC"), ("aa-path", b"NYC,LON"), ("aa-src", b"NYC/users/0/7")]
    assert r.route("users", 1, 4, copied) == local("users", 1, 4)


@pytest.mark.parametrize(
    "headers",
    [
        [("aa-src", b"LON/users/0/1")],  # only aa-src: was "malformed", stopped the flow forever
        [("aa-path", b"SF")],
        [("aa-origin", b"LON")],  # origin alone: no mirror writes that
        [("aa-origin", b"LON"), ("aa-path", b"LON,SF")],  # no aa-src
        [("aa-origin", b"\xff\xfe")],  # not UTF-8
        [("aa-origin", b"SF"), ("aa-origin", b"SF")],  # repeated
        [("aa-origin", b"LON"), ("aa-path", b"SF,LON")],  # path not starting at the origin
        [("aa-origin", b"LON"), ("aa-path", b"LON,SF"), ("aa-src", b"LON/users/x/1")],
        [("aa-origin", b"LON"), ("aa-path", b"LON,SF"), ("aa-src", b"nonsense")],
        [
            ("aa-origin", b"LON"),
            ("aa-path", b"LON,SF"),
            ("aa-src", b"NYC/users/0/1"),
        ],  # src names another DC
        [("aa-origin", b"not a dc")],
        [("aa-origin", None)],
        [("aa-origin", b"")],
    ],
)
def test_partial_or_malformed_provenance_is_local_and_never_stops_the_flow(
    headers: list[tuple[str, bytes]],
) -> None:
    t = topo("flows: {hub-and-spoke: {hub: SF}}\n")
    r = FlowRouter(t, t.flow("SF->NYC"))
    assert r.route("users", 0, 5, headers) == local("users", 0, 5)
    assert r.route_batch("users", 0, [_Rec(5, headers)]) == [local("users", 0, 5)]


def test_genuine_provenance_still_decides() -> None:
    t = topo()
    r = FlowRouter(t, t.flow("SF->NYC"))
    remote = [("aa-origin", b"LON"), ("aa-path", b"LON,SF"), ("aa-src", b"LON/users/0/7")]
    assert r.route("users", 0, 1, remote) == Skip("not-on-route")
    back = [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", b"NYC/users/0/7")]
    assert r.route("users", 0, 2, back) == Skip("visited")


def test_prefix_mode_checks_the_prefixed_topic_name() -> None:
    t = topo("flows: {hub-and-spoke: {hub: NYC}}\nloop_prevention: prefix\n")
    r = FlowRouter(t, t.flow("NYC->LON"))
    genuine = [("aa-origin", b"SF"), ("aa-path", b"SF,NYC"), ("aa-src", b"SF/users/0/7")]
    assert r.route("SF.users", 0, 9, genuine) == [
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC,LON"),
        ("aa-src", b"SF/users/0/7"),
    ]
    # The same headers on NYC's own `users`: an application copied them; NYC's event.
    assert r.route("users", 0, 9, genuine) == [
        ("aa-origin", b"NYC"),
        ("aa-path", b"NYC,LON"),
        ("aa-src", b"NYC/users/0/9"),
    ]


def test_forged_path_never_loops() -> None:
    # A forged path naming this DC twice is not something a mirror writes: the record is
    # local; its copy carries fresh provenance, so it crosses each link once like any event.
    t = topo()
    r = FlowRouter(t, t.flow("SF->NYC"))
    forged = [("aa-origin", b"SF"), ("aa-path", b"SF,NYC,SF"), ("aa-src", b"SF/users/0/1")]
    assert r.route("users", 0, 2, forged) == Skip("looped")
    nyc = FlowRouter(t, t.flow("NYC->SF"))
    assert isinstance(nyc.route("users", 0, 0, local("users", 0, 2)), Skip)


class _Rec:
    def __init__(self, offset: int, headers: list[tuple[str, bytes]]) -> None:
        self.offset, self.headers = offset, headers


class _Timed:
    def __init__(self, offset: int, timestamp: int, headers: list[tuple[str, bytes]]) -> None:
        self.offset, self.timestamp, self.headers = offset, timestamp, headers


NOW_MS = 1_795_000_000_000
"""A record's CreateTime (2026-11-18), before or after each test's cutoff."""
BACK = [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", b"NYC/users/0/7")]


def test_provenance_outside_a_mirrors_batch_is_an_applications_and_copied() -> None:
    """Issue 29, item 3: a perfect NYC copy re-produced into SF's ``users`` by an application
    is not in a batch a mirror marked, so SF->NYC copies it as SF's own record; the same
    headers on a record of a mirror's batch are still believed (skipped, ``visited``)."""
    t = topo("loop_prevention: {mode: headers, unmarked_copies_before: 2026-01-01T00:00:00Z}\n")
    r = FlowRouter(t, t.flow("SF->NYC"))
    records = [_Timed(4, NOW_MS, list(BACK)), _Timed(5, NOW_MS, list(BACK))]
    routes = r.route_batch("users", 0, records, lambda offset: offset == 5)
    assert routes == [local("users", 0, 4), Skip("visited")]
    assert r.unmarked_seen == 1


def test_unmarked_copies_older_than_the_cutoff_are_judged_by_their_headers() -> None:
    """Copies an aa without batch marks wrote (before ``unmarked_copies_before``) keep being
    recognised, so a new flow reading them does not copy them again."""
    t = topo("loop_prevention: {mode: headers, unmarked_copies_before: 2027-01-01T00:00:00Z}\n")
    r = FlowRouter(t, t.flow("SF->NYC"))
    routes = r.route_batch("users", 0, [_Timed(4, NOW_MS, list(BACK))], lambda offset: False)
    assert routes == [Skip("visited")]
