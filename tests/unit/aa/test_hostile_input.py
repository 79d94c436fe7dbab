"""Hostile input (issue 11 section 4): malformed, oversized and duplicated ``aa-*`` headers,
forged paths, invalid event envelopes, YAML bombs and deep nesting, MM2 files with unknown keys
and bad values. Every case gets a clear error or a documented behaviour (the corpus table is
in docs/reliability.md); hypothesis fuzzes the header codec and the config loaders."""

# ruff: noqa: E501  (one case per line reads best as a table)
from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aa import provenance as pv
from aa.config import read_mm2, read_yaml
from aa.config.build import TOP_LEVEL
from aa.config.load import load_config
from aa.config.model import Topology
from aa.config.schema import iter_mm2_keys
from aa.errors import ConfigError, ProvenanceError
from aa.policy import FlowRouter
from aa.protocols import Skip
from conflict.envelope import Event
from conflict.errors import DecodeError

pytestmark = pytest.mark.unit

DCS = """
datacenters:
  SF: {bootstrap: "127.0.0.1:19092"}
  NYC: {bootstrap: "127.0.0.1:29092"}
  LON: {bootstrap: "127.0.0.1:39092"}
"""
MESH = read_yaml(DCS)
SF_NYC = MESH.flow("SF->NYC")


def local_sf(offset: int, *app: tuple[str, bytes]) -> list[tuple[str, bytes]]:
    return [
        *app,
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", f"SF/users/0/{offset}".encode()),
    ]


# -- records ---------------------------------------------------------------------------------

RECORD_CORPUS: list[tuple[str, list[tuple[str, Any]], object]] = [
    ("aa-origin not UTF-8", [("aa-origin", b"\xff\xfe")], "local"),
    ("aa-origin empty", [("aa-origin", b"")], "local"),
    ("aa-origin None", [("aa-origin", None)], "local"),
    ("aa-origin 1 MiB", [("aa-origin", b"A" * (1 << 20))], "local"),
    (
        "aa-path 1 MiB of DC names",
        [
            ("aa-origin", b"NYC"),
            ("aa-path", b"NYC," * 262_143 + b"SF"),
            ("aa-src", b"NYC/users/0/1"),
        ],
        "local",
    ),
    (
        "aa-src 1 MiB",
        [
            ("aa-origin", b"NYC"),
            ("aa-path", b"NYC,SF"),
            ("aa-src", b"NYC/" + b"u" * (1 << 20) + b"/0/1"),
        ],
        "local",
    ),
    (
        "aa-src offset 10^30",
        [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", b"NYC/users/0/" + b"9" * 30)],
        "local",
    ),
    (
        "aa-origin twice",
        [
            ("aa-origin", b"NYC"),
            ("aa-origin", b"NYC"),
            ("aa-path", b"NYC,SF"),
            ("aa-src", b"NYC/users/0/1"),
        ],
        "local",
    ),
    (
        "aa-path twice",
        [
            ("aa-origin", b"NYC"),
            ("aa-path", b"NYC,SF"),
            ("aa-path", b"NYC,SF"),
            ("aa-src", b"NYC/users/0/1"),
        ],
        "local",
    ),
    (
        "aa-src twice",
        [
            ("aa-origin", b"NYC"),
            ("aa-path", b"NYC,SF"),
            ("aa-src", b"NYC/users/0/1"),
            ("aa-src", b"NYC/users/0/1"),
        ],
        "local",
    ),
    ("only aa-src", [("aa-src", b"NYC/users/0/1")], "local"),
    ("only aa-ts", [("aa-ts", b"123")], "local"),
    ("unknown aa-* header kept", [("aa-custom", b"x")], local_sf(0, ("aa-custom", b"x"))),
    (
        "forged path naming the target",
        [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", b"NYC/users/0/1")],
        Skip("visited"),
    ),
    (
        "forged path with a loop",
        [("aa-origin", b"SF"), ("aa-path", b"SF,NYC,SF"), ("aa-src", b"SF/users/0/1")],
        Skip("looped"),
    ),
    (
        "forged origin not in the topology",
        [("aa-origin", b"PAR"), ("aa-path", b"PAR,SF"), ("aa-src", b"PAR/users/0/1")],
        Skip("unknown-origin"),
    ),
    (
        "forged path not ending here",
        [("aa-origin", b"LON"), ("aa-path", b"LON,NYC"), ("aa-src", b"LON/users/0/1")],
        "local",
    ),
    (
        "copied headers, other topic",
        [("aa-origin", b"NYC"), ("aa-path", b"NYC,SF"), ("aa-src", b"NYC/orders/0/1")],
        "local",
    ),
]


@pytest.mark.parametrize(
    ("headers", "want"), [c[1:] for c in RECORD_CORPUS], ids=[c[0] for c in RECORD_CORPUS]
)
def test_hostile_record_headers(headers: list[tuple[str, Any]], want: object) -> None:
    r = FlowRouter(MESH, SF_NYC)
    expected = local_sf(0) if want == "local" else want
    assert r.route("users", 0, 0, headers) == expected
    assert r.route_batch("users", 0, [_Rec(0, headers)]) == [expected]


def test_oversized_headers_are_not_cached() -> None:
    r = FlowRouter(MESH, SF_NYC)
    for i in range(50):  # 50 distinct 1 MiB paths must not pin 50 MiB in the decision cache
        path = b"NYC," * 262_143 + f"X{i}".encode()
        r.route(
            "users", 0, i, [("aa-origin", b"NYC"), ("aa-path", path), ("aa-src", b"NYC/users/0/1")]
        )
    assert sum(len(k[2]) for k in r._decisions) < 1 << 20


def test_non_utf8_keys_and_values_do_not_matter_to_routing() -> None:
    r = FlowRouter(MESH, SF_NYC)  # the router never reads keys or values: the mirror copies bytes
    assert r.route("users", 0, 7, [("app", b"\xff\x00")]) == local_sf(7, ("app", b"\xff\x00"))


class _Rec:
    def __init__(self, offset: int, headers: list[tuple[str, Any]]) -> None:
        self.offset, self.headers = offset, headers


header_values = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.sampled_from(
        [
            b"SF",
            b"NYC",
            b"LON",
            b"NYC,SF",
            b"SF,NYC",
            b"NYC/users/0/1",
            b"SF/users/0/1",
            b"NYC/users/x/1",
        ]
    ),
)
headers_st = st.lists(
    st.tuples(
        st.sampled_from(["aa-origin", "aa-path", "aa-src", "aa-ts", "aa-x", "app"]), header_values
    ),
    max_size=6,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(headers=headers_st, offset=st.integers(0, 2**62))
def test_fuzz_router_never_raises_and_never_forwards_into_a_visited_dc(
    headers: list[tuple[str, Any]], offset: int
) -> None:
    r = FlowRouter(MESH, SF_NYC)
    out = r.route("users", 0, offset, headers)
    if isinstance(out, Skip):
        return
    assert isinstance(out, list)
    p = pv.read(out)  # what the mirror writes is always well formed ...
    assert p.origin is not None
    assert p.path[-1] == "NYC"
    assert not p.looped  # ... and never names a DC twice
    assert pv.mirrored_into(out, "NYC", "users") == p  # NYC believes it
    assert sum(1 for k, _ in out if k in pv.PROVENANCE_HEADERS) == 3


@given(
    headers=st.lists(
        st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=40))), max_size=6
    )
)
def test_fuzz_read_raises_only_provenance_error(headers: list[tuple[str, Any]]) -> None:
    with contextlib.suppress(ProvenanceError):
        pv.read(headers)
    pv.mirrored_into(headers, "SF", "users")  # never raises


@given(
    dc=st.from_regex(pv.DC_NAME, fullmatch=True),
    topic=st.text(
        st.characters(blacklist_characters="/", blacklist_categories=("Cs",)),
        min_size=1,
        max_size=40,
    ),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**63 - 1),
)
def test_fuzz_source_ref_round_trips(dc: str, topic: str, partition: int, offset: int) -> None:
    ref = pv.SourceRef(dc, topic, partition, offset)
    assert pv.SourceRef.decode(ref.encode()) == ref


@given(raw=st.binary(max_size=60))
def test_fuzz_source_ref_decode_raises_only_provenance_error(raw: bytes) -> None:
    try:
        ref = pv.SourceRef.decode(raw)
    except ProvenanceError:
        return
    assert ref.encode() == raw or int(raw.rsplit(b"/", 1)[1]) == ref.offset  # leading zeros


# -- event envelopes (the mirror copies them as bytes; conflict decodes) -----------------------

ENVELOPE_CORPUS = [
    ("tombstone", None),
    ("empty", b""),
    ("not JSON", b"\xff\xfe{"),
    ("JSON array", b"[1,2]"),
    ("unknown field", b'{"supercedes": []}'),
    ("deeply nested", b"[" * 100_000 + b"]" * 100_000),
    ("huge number", b'{"id": 1e999999}'),
]


@pytest.mark.parametrize(
    "value", [c[1] for c in ENVELOPE_CORPUS], ids=[c[0] for c in ENVELOPE_CORPUS]
)
def test_invalid_envelopes_raise_decode_error_naming_the_field(value: bytes | None) -> None:
    with pytest.raises(DecodeError):
        Event.decode(value)


@given(value=st.one_of(st.binary(max_size=80), st.from_regex(rb"\{.{0,60}\}", fullmatch=True)))
def test_fuzz_envelope_decode_raises_only_decode_error(value: bytes) -> None:
    with contextlib.suppress(DecodeError):
        Event.decode(value)


# -- configs -----------------------------------------------------------------------------------

LAUGHS = ", ".join(['"lol"'] * 9)
BILLION_LAUGHS = (  # 9^9 strings once expanded; an error message would print it with !r
    "[&a ["
    + LAUGHS
    + "]"
    + "".join(
        f", &{n} [" + ", ".join([f"*{p}"] * 9) + "]"
        for p, n in zip("abcdefgh", "bcdefghi", strict=False)
    )
    + "]"
)

CONFIG_CORPUS = [
    ("anchor bomb", DCS + "delivery: " + BILLION_LAUGHS + "\n", r"expands to more than 100000"),
    ("anchor bomb, unknown field", DCS + "bomb: " + BILLION_LAUGHS + "\n", r"expands to more"),
    ("deep nesting", DCS + "topics: " + "[" * 5000 + "]" * 5000 + "\n", r"nested too deeply"),
    (
        "deep mapping nesting",
        DCS + "tuning: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
        r"nested too deeply",
    ),
    (
        "nesting",
        DCS + "topics: " + "[" * 100 + "]" * 100 + "\n",
        r"nested too deeply \(more than 64 open brackets\)",
    ),
    ("tab indentation", "datacenters:\n\tSF: x\n", r"not valid YAML"),
    ("not a mapping", "- a\n- b\n", r"expected a mapping"),
    ("binary garbage", "\x00\x01\x02", r"not valid YAML|expected a mapping|empty"),
    ("block nesting", DCS + "tuning:\n" + "".join(" " * i + "a:\n" for i in range(1, 80)), r"nest"),
    (
        "huge integer",
        DCS + "tuning: {max_poll_records: " + "9" * 5000 + "}\n",
        r"not valid YAML: Exceeds the limit",
    ),
    ("key is not a string", DCS + "tuning: {1: 2}\n", r"keys must be strings|unknown field"),
]


@pytest.mark.parametrize(
    ("text", "pattern"), [c[1:] for c in CONFIG_CORPUS], ids=[c[0] for c in CONFIG_CORPUS]
)
def test_hostile_yaml_is_a_clear_config_error(text: str, pattern: str) -> None:
    started = time.process_time()
    with pytest.raises(ConfigError, match=pattern):
        read_yaml(text, "t.yaml")
    assert time.process_time() - started < 10  # a bound, not a timing claim: no blow-up


MM2_BASE = (
    "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"
)
MM2_CORPUS = [
    (
        "unknown keys are listed, not errors",
        MM2_BASE + "tasks.max = 4\nfoo.bar = baz\nA->B.frobnicate = 1\n",
        None,
    ),
    (
        "bad boolean",
        MM2_BASE + "sync.topic.configs.enabled = maybe\n",
        r"sync\.topic\.configs\.enabled: invalid value 'maybe'",
    ),
    (
        "bad number",
        MM2_BASE + "emit.heartbeats.interval.seconds = often\n",
        r"^m\.p: emit\.heartbeats\.interval\.seconds",
    ),
    ("bad regex", MM2_BASE + "topics = (\n", r"^m\.p: topics: invalid regular expression"),
    (
        "bad EOS value",
        MM2_BASE + "exactly.once.source.support = sometimes\n",
        r"exactly\.once\.source\.support: invalid value 'sometimes'",
    ),
    ("bad escape", MM2_BASE + "topics = \\uZZZZ\n", r"line 5: malformed \\uXXXX escape"),
    ("flow to itself", MM2_BASE + "A->A.enabled = true\n", r"A->A|itself"),
    ("empty file", "", r"clusters: missing"),
    (
        "huge cluster list",
        "clusters = " + ", ".join(f"C{i}" for i in range(5000)) + "\n",
        r"bootstrap\.servers: missing",
    ),
]


@pytest.mark.parametrize(
    ("text", "pattern"), [c[1:] for c in MM2_CORPUS], ids=[c[0] for c in MM2_CORPUS]
)
def test_hostile_mm2_files(text: str, pattern: str | None) -> None:
    if pattern is None:
        t = read_mm2(text, "m.p")
        assert t.flows
        return
    with pytest.raises(ConfigError, match=pattern):
        read_mm2(text, "m.p")


def test_mm2_unknown_keys_are_kept_for_aa_plan() -> None:
    t = read_mm2(MM2_CORPUS[0][1], "m.p")
    assert set(t.ignored) == {"tasks.max", "foo.bar", "A->B.frobnicate"}


@pytest.mark.parametrize("suffix", [".yaml", ".properties"])
def test_config_file_not_utf8_is_a_clear_error(tmp_path: Any, suffix: str) -> None:
    f = tmp_path / f"t{suffix}"
    f.write_bytes(b"clusters = A\xff\xfe\n")
    with pytest.raises(ConfigError, match=r"not UTF-8"):
        load_config(f)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=200))
def test_fuzz_yaml_loader_raises_only_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):
        read_yaml(text, "t.yaml")


yaml_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
sections = st.sampled_from(list(TOP_LEVEL))


@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.dictionaries(sections, yaml_values, max_size=4))
def test_fuzz_topology_builder_raises_only_config_error(doc: dict[str, Any]) -> None:
    import yaml

    base = yaml.safe_load(DCS)
    base.update(doc)
    with contextlib.suppress(ConfigError):
        read_yaml(yaml.safe_dump(base), "t.yaml")


mm2_keys = st.sampled_from(
    [
        "clusters",
        "A.bootstrap.servers",
        "B.bootstrap.servers",
        "A->B.enabled",
        "B->A.enabled",
        "A->B.topics",
        "topics",
        "topics.exclude",
        "replication.policy.class",
        "replication.policy.separator",
        "exactly.once.source.support",
        "A.security.protocol",
        "A.sasl.mechanism",
        "A.sasl.jaas.config",
        "A.ssl.truststore.location",
        "A.ssl.truststore.type",
        "groups",
        "refresh.topics.interval.seconds",
        "emit.checkpoints.interval.seconds",
        "sync.group.offsets.enabled",
        "x.y",
        # and every MM2 key a setting declares (aa.config.schema)
        *sorted({key for key, _ in iter_mm2_keys(Topology)}),
    ]
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.lists(
        st.tuples(mm2_keys, st.text(st.characters(blacklist_characters="\r\n"), max_size=20)),
        max_size=10,
    )
)
def test_fuzz_mm2_reader_raises_only_config_error(pairs: list[tuple[str, str]]) -> None:
    text = "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"
    text += "".join(f"{k} = {v}\n" for k, v in pairs)
    with contextlib.suppress(ConfigError):
        read_mm2(text, "m.p")


@given(text=st.text(max_size=200))
def test_fuzz_mm2_raw_text_raises_only_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):
        read_mm2(text, "m.p")
