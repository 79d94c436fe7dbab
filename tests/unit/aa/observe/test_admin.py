"""The admin API of `aa run` (issue 30): writing calls refused without the token, the token
never shown, bad bodies answered 400; the control state it changes (pauses, failed topics,
the rate limit) and the reload plan, as pure logic."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import orjson
import pytest
from aiokafka import TopicPartition
from structlog.testing import capture_logs

from aa.config import read_yaml
from aa.errors import AaError
from aa.mirror.build import build_flows, select_flows
from aa.mirror.control import Applied, FlowControl, Pause, Scope, Throttle, TopicFailure
from aa.mirror.reload import plan_reload, signature
from aa.observe.admin import AdminApi, token_from
from aa.observe.http import MetricsServer
from aa.observe.metrics import Metrics
from tests.helpers.http import http_get, http_request

pytestmark = pytest.mark.unit

TOKEN = "s3cret-token-for-the-test"


class Process:
    """What the API asks of the process, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def state(self) -> dict[str, Any]:
        return {"flows": {"SF->NYC": {"state": "running"}}}

    async def pause(
        self, flow: str, topic: str | None, partition: int | None, note: str
    ) -> dict[str, Any]:
        Scope(flow, topic, partition)  # refuses what a scope refuses
        self.calls.append(("pause", flow, topic, partition, note))
        return {"ok": True}

    async def resume(self, flow: str, topic: str | None, partition: int | None) -> dict[str, Any]:
        self.calls.append(("resume", flow, topic, partition))
        return {"ok": True}

    async def set_rate(self, flow: str, bytes_per_s: float | None) -> dict[str, Any]:
        self.calls.append(("rate", flow, bytes_per_s))
        return {"ok": True}

    async def reload(self) -> dict[str, Any]:
        self.calls.append(("reload",))
        return {"ok": True}


async def _serve(token: str | None) -> tuple[MetricsServer, Process]:
    process = Process()
    secret = token_from({"AA_ADMIN_TOKEN": token} if token else {})
    server = MetricsServer(Metrics(), lambda: (True, {}), port=0, routes=AdminApi(process, secret))
    await server.start()
    return server, process


def _post(server: MetricsServer, call: str, body: Any, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return http_request(server.port, "POST", f"/api/v1/{call}", orjson.dumps(body), headers=headers)


async def test_writing_calls_are_refused_without_a_configured_token() -> None:
    server, process = await _serve(None)
    try:
        for call in ("pause", "resume", "rate", "reload"):
            status, body = await _post(server, call, {"flow": "SF->NYC"}, token="anything")
            assert status == 403
            assert "AA_ADMIN_TOKEN" in orjson.loads(body)["error"]
        status, body = await http_get(server.port, "/api/v1/state")  # reading is allowed
        assert status == 200
        assert orjson.loads(body)["flows"]["SF->NYC"]["state"] == "running"
    finally:
        await server.close()
    assert process.calls == []


async def test_writing_calls_need_the_token_and_it_is_never_shown() -> None:
    server, process = await _serve(TOKEN)
    try:
        with capture_logs() as logs:
            for token in (None, "wrong", TOKEN[:-1]):
                status, body = await _post(server, "pause", {"flow": "SF->NYC"}, token)
                assert status == 401
                assert TOKEN not in body.decode()
        assert TOKEN not in repr(logs)
        pause = {"flow": "SF->NYC", "topic": "orders", "partition": 2, "note": "deploy"}
        status, _ = await _post(server, "pause", pause, TOKEN)
        assert status == 200
        status, _ = await _post(server, "rate", {"flow": "SF->NYC", "bytes_per_s": "10MB"}, TOKEN)
        assert status == 200
        status, _ = await _post(server, "reload", {}, TOKEN)
        assert status == 200
    finally:
        await server.close()
    assert process.calls == [
        ("pause", "SF->NYC", "orders", 2, "deploy"),
        ("rate", "SF->NYC", 10_000_000.0),
        ("reload",),
    ]


@pytest.mark.parametrize(
    ("call", "body", "says"),
    [
        ("pause", b"{not json", "not JSON"),
        ("pause", b"[1, 2]", "JSON object"),
        ("pause", b"{}", "name the flow"),
        ("pause", b'{"flow": "SF->NYC", "partition": 1}', "needs its topic"),
        ("pause", b'{"flow": "SF->NYC", "topic": "t", "partition": "x"}', "partition"),
        ("rate", b'{"flow": "SF->NYC", "bytes_per_s": "fast"}', "not a rate"),
    ],
)
async def test_a_bad_body_is_answered_400_with_the_reason(
    call: str, body: bytes, says: str
) -> None:
    server, process = await _serve(TOKEN)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        status, answer = await http_request(
            server.port, "POST", f"/api/v1/{call}", body, headers=headers
        )
    finally:
        await server.close()
    assert status == 400
    assert says in orjson.loads(answer)["error"]
    assert process.calls == []


def test_a_pause_blocks_the_partitions_it_covers_and_a_resume_lifts_what_is_inside() -> None:
    control = FlowControl("SF->NYC")
    control.pause(Pause(Scope("SF->NYC", "orders"), 1.0))
    control.pause(Pause(Scope("SF->NYC", "users", 1), 1.0))
    blocked = {
        tp
        for tp in (TopicPartition(t, p) for t in ("orders", "users") for p in (0, 1))
        if control.blocks(tp, 0.0)
    }
    assert blocked == {
        TopicPartition("orders", 0),
        TopicPartition("orders", 1),
        TopicPartition("users", 1),
    }
    assert control.topic_state("orders") == "paused"
    assert control.topic_state("users") == "running"  # one partition only
    assert sorted(control.resume(Scope("SF->NYC"))) == ["SF->NYC/orders", "SF->NYC/users/1"]
    assert not control.pauses


def test_a_failed_topic_blocks_its_partitions_until_its_retry_time() -> None:
    control = FlowControl("SF->NYC")
    control.retry_s = 30.0
    failure = control.fail_topic(TopicFailure("big", 0, 41, "record-too-large"))
    tp = TopicPartition("big", 3)
    assert control.blocks(tp, failure.retry_at - 1)
    assert not control.blocks(tp, failure.retry_at)
    assert not control.blocks(TopicPartition("small", 0), 0.0)
    again = control.fail_topic(TopicFailure("big", 0, 41, "record-too-large"))
    assert (again.attempts, again.since) == (2, failure.since)
    assert again.retry_at - again.since >= 60  # the backoff doubled
    control.resume(Scope("SF->NYC", "big"))  # aa resume: tried at once
    assert not control.blocks(tp, 0.0)
    assert control.recovered("big") is again
    assert control.topic_state("big") == "running"


class Consumer:
    def __init__(self, assigned: set[TopicPartition]) -> None:
        self.assigned = assigned
        self.held: set[TopicPartition] = set()

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def paused(self) -> set[TopicPartition]:
        return set(self.held)

    def pause(self, *tps: TopicPartition) -> None:
        self.held.update(tps)

    def resume(self, *tps: TopicPartition) -> None:
        self.held.difference_update(tps)


def test_pauses_are_applied_to_the_consumer_and_again_after_a_rebalance() -> None:
    t0, t1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    control, consumer, applied = FlowControl("SF->NYC"), Consumer({t0}), Applied()
    control.pause(Pause(Scope("SF->NYC", "orders"), 1.0))
    applied.apply(control, consumer)
    assert consumer.held == {t0}
    consumer.assigned, consumer.held = {t0, t1}, set()  # a rebalance forgets pauses
    applied.apply(control, consumer)
    assert consumer.held == {t0, t1}
    control.resume(Scope("SF->NYC", "orders"))
    applied.apply(control, consumer)
    assert consumer.held == set()


async def test_the_throttle_holds_a_flow_to_its_rate_and_follows_a_new_rate_at_once() -> None:
    throttle = Throttle(1_000_000.0)
    loop = asyncio.get_running_loop()
    start = loop.time()
    for _ in range(5):
        await throttle.spend(100_000)  # 0.5 MB at 1 MB/s: at least 0.5 s
    assert loop.time() - start >= 0.45
    waiting = asyncio.create_task(throttle.spend(10_000_000))  # 10 s at this rate
    await asyncio.sleep(0)
    throttle.set_rate(0.0)  # no limit: the wait ends at once
    await asyncio.wait_for(waiting, 5)
    stop = asyncio.Event()
    throttle.set_rate(1.0)
    held = asyncio.create_task(throttle.spend(1_000_000, stop))
    await asyncio.sleep(0)
    stop.set()  # a stopping flow is not held by its rate limit
    await asyncio.wait_for(held, 5)


TOPOLOGY = """
datacenters:
  SF: {{bootstrap: "127.0.0.1:19092"}}
  NYC: {{bootstrap: "127.0.0.1:29092"}}
  LON: {{bootstrap: "127.0.0.1:39092"}}
flows:
  - SF->NYC: {{topics: [{sf_topics}]}}
  - LON->NYC
topics: [users]
tuning: {{max_bytes_per_s: {rate}}}
"""


def _signatures(text: str) -> dict[str, Any]:
    topology = read_yaml(text)
    flows = build_flows(topology, select_flows(topology, dc="NYC"))
    return {
        s.name: (signature(topology, topology.flow(s.name), s), s.max_bytes_per_s) for s, _ in flows
    }


def test_a_reload_touches_only_the_flows_whose_settings_changed() -> None:
    before = _signatures(TOPOLOGY.format(sf_topics="users", rate=0))
    plan = plan_reload(before, _signatures(TOPOLOGY.format(sf_topics="users, orders", rate=0)))
    assert (plan.restarted, plan.unchanged) == (("SF->NYC",), ("LON->NYC",))
    plan = plan_reload(before, _signatures(TOPOLOGY.format(sf_topics="users", rate="10MB")))
    assert (plan.restarted, plan.retuned) == ((), ("LON->NYC", "SF->NYC"))
    assert plan_reload(before, before).unchanged == ("LON->NYC", "SF->NYC")


def test_a_scope_refuses_a_partition_without_its_topic() -> None:
    with pytest.raises(AaError, match="needs its topic"):
        Scope("SF->NYC", None, 3)


async def test_a_running_flow_whose_source_does_not_answer_says_it_waits() -> None:
    """While SF was down, `aa status` in NYC showed `SF->NYC running`: the flow's clients
    retry without failing, so nothing said it copied nothing. Now the supervisor asks the
    flow's DCs while it runs, and /healthz says what it waits for, until SF answers again."""
    from aa.mirror.settings import FlowSettings
    from aa.mirror.supervisor import Supervisor

    sf_up = asyncio.Event()

    class Quiet:
        def __init__(self, *_: Any) -> None:
            pass

        async def run(self, stop: asyncio.Event) -> None:
            await stop.wait()

    async def answers(client: Any) -> bool:
        return client["bootstrap_servers"] != "sf:1" or sf_up.is_set()

    settings = FlowSettings(
        "SF", "NYC", {"bootstrap_servers": "sf:1"}, {"bootstrap_servers": "nyc:1"}, "g"
    )
    sup = Supervisor(
        [(settings, object())],  # type: ignore[list-item]
        Metrics(),
        flow_factory=Quiet,  # type: ignore[arg-type]
        probe_interval_s=0.01,
        answers=answers,
    )
    task = asyncio.create_task(sup.run(install_signals=False))
    try:

        async def flow_entry() -> dict[str, Any]:
            return dict(sup.health()[1]["flows"]["SF->NYC"])

        for _ in range(3000):  # a polling deadline of ~30 s
            if "waiting" in await flow_entry():
                break
            await asyncio.sleep(0.01)
        entry = await flow_entry()
        assert entry["state"] == "running"
        assert entry["waiting"].startswith("SF unreachable since 20")
        sf_up.set()
        for _ in range(3000):
            if "waiting" not in await flow_entry():
                break
            await asyncio.sleep(0.01)
        assert "waiting" not in await flow_entry()
    finally:
        sup.stop()
        await asyncio.wait_for(task, 30)


async def test_sighup_runs_the_reload_and_the_process_goes_on() -> None:
    import os
    import signal

    from aa.mirror.supervisor import Supervisor

    sup = Supervisor([], Metrics())
    reloaded = asyncio.Event()

    async def reload() -> None:
        reloaded.set()

    sup.on_reload = reload
    task = asyncio.create_task(sup.run())
    try:
        for _ in range(3000):  # until the handler is installed (a polling deadline)
            if signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, None):
                break
            await asyncio.sleep(0.01)
        assert signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, None)
        os.kill(os.getpid(), signal.SIGHUP)
        await asyncio.wait_for(reloaded.wait(), 30)
        assert not task.done()
    finally:
        sup.stop()
        await asyncio.wait_for(task, 30)


async def test_mutual_tls_lets_a_client_with_a_certificate_write_and_refuses_one_without(
    tmp_path: Any,
) -> None:
    """metrics.tls_certfile + tls_client_cafile: a client whose certificate the CA signed may
    write without the token (aa pause --cert); a client without one gets no connection."""
    from aa.cli.operate import call
    from aa.config.model import MetricsEndpoint
    from aa.observe.tls import is_mutual, server_context
    from tests.helpers.tls import make_pki

    pki = make_pki(tmp_path / "pki")
    endpoint = MetricsEndpoint(
        tls_certfile=str(pki.broker_keystore), tls_client_cafile=str(pki.ca_file)
    )
    process = Process()
    server = MetricsServer(
        Metrics(),
        lambda: (True, {}),
        port=0,
        routes=AdminApi(process, None, mutual_tls=is_mutual(endpoint)),
        ssl_context=server_context(endpoint),
    )
    await server.start()
    base = f"https://127.0.0.1:{server.port}"
    try:
        client = ssl.create_default_context(cafile=str(pki.ca_file))
        client.load_cert_chain(str(pki.broker_keystore))  # signed by the CA the port trusts
        answer = await asyncio.to_thread(call, base, "pause", {"flow": "SF->NYC"}, client)
        assert answer == {"ok": True}
        anonymous = ssl.create_default_context(cafile=str(pki.ca_file))
        with pytest.raises(AaError, match="no `aa run` answers"):
            await asyncio.to_thread(call, base, "pause", {"flow": "SF->NYC"}, anonymous)
    finally:
        await server.close()
    assert process.calls == [("pause", "SF->NYC", None, None, "")]


def test_tls_settings_without_a_certificate_name_the_field() -> None:
    from aa.config.model import MetricsEndpoint
    from aa.errors import ConfigError
    from aa.observe.tls import server_context

    with pytest.raises(
        ConfigError, match=r"metrics\.tls_client_cafile needs metrics\.tls_certfile"
    ):
        server_context(MetricsEndpoint(tls_client_cafile="/etc/ca.pem"))


async def test_a_reload_stops_a_removed_flow_starts_an_added_one_and_leaves_the_rest() -> None:
    from aa.mirror.reload import ReloadPlan
    from aa.mirror.settings import FlowSettings
    from aa.mirror.supervisor import Supervisor

    runs: list[str] = []
    stopped: list[str] = []

    class Quiet:
        def __init__(self, settings: FlowSettings, *_: Any) -> None:
            self.name = settings.name

        async def run(self, stop: asyncio.Event) -> None:
            runs.append(self.name)
            await stop.wait()
            stopped.append(self.name)

    def flow(source: str) -> tuple[FlowSettings, Any]:
        return FlowSettings(source, "NYC", {}, {}, "g"), object()

    async def always(_: Any) -> bool:
        return True

    sup = Supervisor(
        [flow("SF"), flow("LON")],
        Metrics(),
        flow_factory=Quiet,
        answers=always,  # type: ignore[arg-type]
    )
    task = asyncio.create_task(sup.run(install_signals=False))
    try:
        for _ in range(3000):
            if len(runs) == 2:
                break
            await asyncio.sleep(0.01)
        sf = sup.live("SF->NYC")
        plan = ReloadPlan(added=("PAR->NYC",), removed=("LON->NYC",), unchanged=("SF->NYC",))
        await sup.apply([flow("SF"), flow("PAR")], plan)
        for _ in range(3000):
            if "PAR->NYC" in runs:
                break
            await asyncio.sleep(0.01)
        assert stopped == ["LON->NYC"]  # drained and stopped, the others untouched
        assert sup.live("SF->NYC") is sf
        assert sorted(sup.states) == ["PAR->NYC", "SF->NYC"]
        assert sorted(sup.plane.controls) == ["PAR->NYC", "SF->NYC"]
    finally:
        sup.stop()
        await asyncio.wait_for(task, 30)
