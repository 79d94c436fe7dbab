"""Schema ids translated across DCs (issue 34), against real schema registries (Apicurio
Registry with Confluent's API, one per DC: tests/helpers/registry.py) and real brokers.

Records are written in SF framed with SF's registry (Avro through fastavro, Protobuf through
the official library); a consumer in NYC decodes every copy with NYC's registry only."""

from __future__ import annotations

import re
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from aa.config.registries import SchemaTranslation
from aa.config.topic_filter import TopicFilter
from aa.dev.registry import LocalRegistry
from aa.mirror.flow import DEAD_LETTER_REASON
from aa.mirror.settings import FlowSettings
from aa.schemas.wire import header, schema_id
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce
from tests.helpers.mirror import (
    OriginOnlyRouter,
    committed,
    exact,
    running_flow,
    sf_to_nyc,
    supervised,
    topic_failed,
)
from tests.helpers.registry import (
    avro_frame,
    avro_schema,
    call,
    decode,
    proto_type,
    register,
    running_registries,
)
from tests.helpers.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration

Names = Callable[[str], str]
Registries = dict[str, LocalRegistry]
ORDER_V1 = avro_schema("Order", ("id", "long"), ("item", "string"))
ORDER_V2 = avro_schema("Order", ("id", "long"), ("item", "string"), ("qty", "int", 1))


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registries]:
    """A real registry per DC (SF, NYC) for this module's tests."""
    with running_registries(tmp_path_factory.mktemp("registries")) as started:
        yield started


def _only(*topics: str) -> TopicFilter:
    return TopicFilter(tuple(re.escape(t) for t in topics), ())


def _translation(reg: Registries, values: TopicFilter, **kw: object) -> SchemaTranslation:
    return SchemaTranslation(reg["SF"].url, reg["NYC"].url, values=values, **kw)


def _dead_lettering(
    dcs: dict[str, DcCluster], names: Names, reg: Registries, topic: str
) -> tuple[FlowSettings, str]:
    """SF->NYC translating ``topic``'s values, refusals dead-lettered; and its dead-letter topic."""
    dead = names("dlq")
    settings = sf_to_nyc(
        dcs["SF"].bootstrap,
        dcs["NYC"].bootstrap,
        names("g"),
        on_error="dead-letter",
        dead_letter_topic=dead,
        schemas=_translation(reg, _only(topic)),
    )
    return settings, dead


def _offset_ids(reg: Registries, names: Names, n: int = 3) -> None:
    """Schemas only NYC has, so that the same schema gets another id there than in SF."""
    for i in range(n):
        register(reg["NYC"].url, names(f"nyc-only-{i}"), avro_schema(f"Filler{i}", ("x", "int")))


async def test_avro_and_protobuf_copies_decode_with_nyc_registry_only_a_new_version_too(
    dc_clusters: dict[str, DcCluster], unique_name: Names, registries: Registries
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    sf_reg, nyc_reg = registries["SF"].url, registries["NYC"].url
    orders = await create_topic(sf, unique_name("orders"))
    users = await create_topic(sf, unique_name("users"))
    _offset_ids(registries, unique_name)
    call(f"{sf_reg}/config/{orders}-value", "PUT", {"compatibility": "FULL"})
    key_id = register(sf_reg, f"{orders}-key", '"string"')
    v1 = register(sf_reg, f"{orders}-value", ORDER_V1)
    user = proto_type("aa.test", "User", ("name", "string"), ("id", "int64"))
    user_id = register(sf_reg, f"{users}-value", user.text, "PROTOBUF")
    await produce(
        sf,
        orders,
        [
            Rec(
                avro_frame(key_id, '"string"', f"o{i}"),
                avro_frame(v1, ORDER_V1, {"id": i, "item": f"i{i}"}),
            )
            for i in range(20)
        ],
    )
    await produce(
        sf, users, [Rec(None, user.frame(user_id, name=f"u{i}", id=i)) for i in range(20)]
    )
    settings = sf_to_nyc(
        sf,
        nyc,
        unique_name("g"),
        schemas=_translation(registries, _only(orders, users), keys=_only(orders)),
    )
    router = OriginOnlyRouter("SF", "NYC", f"^({re.escape(orders)}|{re.escape(users)})$")
    async with running_flow(settings, router):
        got_orders = await consume_all(nyc, orders, count=20, timeout=90)
        got_users = await consume_all(nyc, users, count=20, timeout=60)
        # a new version registered in SF while the flow runs
        v2 = register(sf_reg, f"{orders}-value", ORDER_V2)
        await produce(
            sf,
            orders,
            [
                Rec(None, avro_frame(v2, ORDER_V2, {"id": i, "item": "new", "qty": i}))
                for i in range(20, 30)
            ],
        )
        got_orders = await consume_all(nyc, orders, count=30, timeout=60)
    assert [decode(nyc_reg, r.value) for r in got_orders] == [
        *({"id": i, "item": f"i{i}"} for i in range(20)),
        *({"id": i, "item": "new", "qty": i} for i in range(20, 30)),
    ]
    assert [decode(nyc_reg, r.key) for r in got_orders[:20]] == [f"o{i}" for i in range(20)]
    protos = {user.text: user}
    assert [(m.name, m.id) for m in (decode(nyc_reg, r.value, protos) for r in got_users)] == [
        (f"u{i}", i) for i in range(20)
    ]
    nyc_v1, nyc_v2 = schema_id(got_orders[0].value), schema_id(got_orders[-1].value)
    assert nyc_v1 != v1, (v1, nyc_v1)
    assert nyc_v2 != v2, (v2, nyc_v2)
    assert nyc_v1 != nyc_v2
    assert schema_id(got_users[0].value) != user_id
    # every byte after the id is the source's
    assert got_users[0].value[5:] == user.frame(user_id, name="u0", id=0)[5:]
    # same subjects, same versions, and the subject's own compatibility level came along
    assert call(f"{nyc_reg}/subjects/{orders}-value/versions") == [1, 2]
    assert call(f"{nyc_reg}/config/{orders}-value")["compatibilityLevel"] == "FULL"


async def test_an_exactly_once_flow_translates_in_its_transactions(
    dc_clusters: dict[str, DcCluster], unique_name: Names, registries: Registries
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"))
    _offset_ids(registries, unique_name)
    order = avro_schema("Order", ("id", "long"), ("eos", "string", topic))
    v1 = register(registries["SF"].url, f"{topic}-value", order)
    await produce(
        sf, topic, [Rec(None, avro_frame(v1, order, {"id": i, "eos": ""})) for i in range(5)]
    )
    tag = uuid.uuid4().hex[:6]  # a transactional id of its own: tests share brokers
    settings = sf_to_nyc(
        sf,
        nyc,
        unique_name("g"),
        names=(f"S{tag}", f"N{tag}"),
        delivery="exactly-once",
        schemas=_translation(registries, _only(topic)),
    )
    async with running_flow(settings, OriginOnlyRouter(f"S{tag}", f"N{tag}", exact(topic))):
        copies = await consume_all(
            nyc, topic, count=5, timeout=90, isolation_level="read_committed"
        )
    assert [decode(registries["NYC"].url, r.value)["id"] for r in copies] == list(range(5))
    assert schema_id(copies[0].value) != v1


async def test_a_record_with_an_unknown_schema_id_is_dead_lettered_and_nothing_after_it_is_lost(
    dc_clusters: dict[str, DcCluster], unique_name: Names, registries: Registries
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"))
    v1 = register(registries["SF"].url, f"{topic}-value", ORDER_V1)
    values = [avro_frame(v1, ORDER_V1, {"id": i, "item": "x"}) for i in range(10)]
    values.insert(5, header(987_654) + b"\x02\x02x")  # an id SF's registry never issued
    await produce(sf, topic, [Rec(b"k", v, partition=0) for v in values])
    settings, dead = _dead_lettering(dc_clusters, unique_name, registries, topic)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        copies = await consume_all(nyc, topic, count=10, timeout=90)
        letters = await consume_all(nyc, dead, count=1, timeout=30)
    assert [decode(registries["NYC"].url, r.value)["id"] for r in copies] == list(range(10))
    assert letters[0].value == values[5]  # as it was written in SF, with SF's framing
    reason = dict(letters[0].headers)[DEAD_LETTER_REASON].decode()
    assert reason.startswith("schema-unknown: schema id 987654"), reason


async def test_an_unknown_schema_id_under_on_error_fail_fails_its_topic_before_it(
    dc_clusters: dict[str, DcCluster], unique_name: Names, registries: Registries
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"))
    v1 = register(registries["SF"].url, f"{topic}-value", ORDER_V1)
    values = [avro_frame(v1, ORDER_V1, {"id": i, "item": "x"}) for i in range(6)]
    values[4] = header(987_655) + b"\x02\x02x"
    await produce(sf, topic, [Rec(b"k", v, partition=0) for v in values])
    group = unique_name("g")
    settings = sf_to_nyc(sf, nyc, group, schemas=_translation(registries, _only(topic)))
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        state = sup.states["SF->NYC"]
        failure = await topic_failed(sup.plane.controls["SF->NYC"], topic, timeout=90)
        await eventually(  # up to, not past, the refused one
            lambda: _committed_is(committed(sf, group, topic, 1), {0: 4}), message="commit 4"
        )
    assert state.restarts == 0
    assert state.last_error is None  # the topic failed (issue 30), not the flow
    assert "schema id 987655" in failure.reason, failure.reason
    assert "register the schema in the source's registry" in failure.reason
    copies = await consume_all(nyc, topic, count=4, timeout=30, settle=1.0)
    assert len(copies) == 4


async def test_a_schema_the_target_registry_refuses_is_dead_lettered_never_copied(
    dc_clusters: dict[str, DcCluster], unique_name: Names, registries: Registries
) -> None:
    sf, nyc = dc_clusters["SF"].bootstrap, dc_clusters["NYC"].bootstrap
    topic = await create_topic(sf, unique_name("orders"))
    subject = f"{topic}-value"
    # NYC's producers registered another Order under the subject, which accepts only
    # compatible versions: SF's Order (item a long, not a string) is refused there
    register(registries["NYC"].url, subject, avro_schema("Order", ("id", "long"), ("item", "long")))
    call(f"{registries['NYC'].url}/config/{subject}", "PUT", {"compatibility": "FULL"})
    # a schema of this test's own (a registry gives the same schema the same id under every
    # subject, and a flow that knows an id already copies it without registering again)
    order = avro_schema("Order", ("id", "long"), ("item", "string"), ("note", "string", topic))
    v1 = register(registries["SF"].url, subject, order)
    await produce(sf, topic, [Rec(None, avro_frame(v1, order, {"id": 1, "item": "x", "note": ""}))])
    settings, dead = _dead_lettering(dc_clusters, unique_name, registries, topic)
    async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(topic))):
        letters = await consume_all(nyc, dead, count=1, timeout=90)
    reason = dict(letters[0].headers)[DEAD_LETTER_REASON].decode()
    assert reason.startswith("schema-refused: "), reason
    assert "409" in reason, reason
    assert await consume_all(nyc, topic, count=0, timeout=5, settle=1.0) == []


def _port(url: str) -> int:
    return int(urllib.parse.urlsplit(url).port or 0)


async def test_a_registry_away_stalls_only_its_flow_until_it_answers_a_restart_needs_it_not(
    dc_clusters: dict[str, DcCluster], unique_name: Names, registries: Registries
) -> None:
    sf, nyc, lon = (dc_clusters[dc].bootstrap for dc in ("SF", "NYC", "LON"))
    framed = await create_topic(sf, unique_name("orders"))
    plain = await create_topic(sf, unique_name("plain"))
    v1 = register(registries["SF"].url, f"{framed}-value", ORDER_V1)
    proxy = TcpProxy(_port(registries["SF"].url)).start()
    try:
        via_proxy = registries["SF"].url.replace(
            f":{_port(registries['SF'].url)}/", f":{proxy.port}/"
        )
        schemas = SchemaTranslation(via_proxy, registries["NYC"].url, values=_only(framed))
        group = unique_name("g")
        settings = sf_to_nyc(sf, nyc, group, schemas=schemas)
        other = sf_to_nyc(sf, lon, unique_name("g"), names=("SF", "LON"))
        proxy.cut()
        await produce(
            sf,
            framed,
            [Rec(None, avro_frame(v1, ORDER_V1, {"id": i, "item": "x"})) for i in range(5)],
        )
        await produce(sf, plain, [Rec(None, b"p%d" % i) for i in range(5)])
        with capture_logs() as logs:
            async with (
                running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(framed))),
                running_flow(other, OriginOnlyRouter("SF", "LON", exact(plain))),
            ):
                await eventually(
                    lambda: any(e["event"] == "schema_registry_unavailable" for e in logs),
                    timeout=60,
                    message="the flow says it waits for SF's registry",
                )
                # the flow that needs no registry copies on
                assert len(await consume_all(lon, plain, count=5, timeout=60)) == 5
                assert await consume_all(nyc, framed, count=0, timeout=5, settle=1.0) == []
                proxy.heal()
                copies = await consume_all(nyc, framed, count=5, timeout=90)
        waits = [e for e in logs if e["event"] == "schema_registry_unavailable"]
        assert len(waits) == 1, waits
        assert "the source schema registry" in waits[0]["error"], waits[0]
        assert any(e["event"] == "schema_registry_back" for e in logs)
        assert [decode(registries["NYC"].url, r.value)["id"] for r in copies] == list(range(5))
        # a restarted flow knows the ids from its ids topic: it copies with the registry away
        proxy.cut()
        await produce(
            sf,
            framed,
            [Rec(None, avro_frame(v1, ORDER_V1, {"id": i, "item": "y"})) for i in range(5, 8)],
        )
        with capture_logs() as logs:
            async with running_flow(settings, OriginOnlyRouter("SF", "NYC", exact(framed))):
                copies = await consume_all(nyc, framed, count=8, timeout=60)
        assert [decode(registries["NYC"].url, r.value)["id"] for r in copies] == list(range(8))
        assert not [e for e in logs if e["event"] == "schema_registry_unavailable"]
        started = [e for e in logs if e["event"] == "schema_translation_started"]
        assert started, logs
        assert started[0]["known"] >= 1, started
    finally:
        proxy.close()


async def _committed_is(offsets: Any, want: dict[int, int]) -> bool:
    return bool(await offsets == want)
