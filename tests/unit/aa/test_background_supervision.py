"""Nothing dies silently (issue 10 item 12): every background task of `aa run` is supervised —
a failure is logged with its cause, counted, restarted with backoff and shown in /healthz —
and aiokafka's own log lines come out in aa's chosen log format."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from aiokafka.errors import KafkaConnectionError, TopicAuthorizationFailedError
from structlog.testing import capture_logs

from aa.background import BackgroundTask, LagExportError
from aa.mirror.supervisor import Backoff, Supervisor
from aa.observe.http import MetricsServer
from aa.observe.metrics import Metrics
from tests.helpers.http import http_get

pytestmark = pytest.mark.unit


async def _until(check: object, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():  # type: ignore[operator]
        if asyncio.get_running_loop().time() >= deadline:  # a polling deadline, not a timing
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def test_crashed_background_task_is_logged_counted_restarted_and_shown_in_healthz() -> None:
    calls = 0
    second_run = asyncio.Event()

    async def flaky(stop: asyncio.Event) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("checkpoint topic unreachable")
        second_run.set()
        await stop.wait()

    metrics = Metrics()
    sup = Supervisor([], metrics, backoff=Backoff(initial_s=0.01, max_s=0.01))
    sup.extra_tasks.append(BackgroundTask("checkpoints:SF->NYC", flaky))
    server = MetricsServer(metrics, sup.health, port=0)
    await server.start()
    with capture_logs() as logs:
        runner = asyncio.create_task(sup.run(install_signals=False))
        try:
            await asyncio.wait_for(second_run.wait(), 30)
            _, detail = sup.health()
            task = detail["tasks"]["checkpoints:SF->NYC"]
            assert task["state"] == "running"
            assert task["restarts"] == 1
            assert "checkpoint topic unreachable" in task["last_error"]
            status, body = await http_get(server.port, "/healthz")
            assert status == 200  # a background failure degrades, it does not fail the flows
            assert orjson.loads(body)["tasks"]["checkpoints:SF->NYC"]["restarts"] == 1
            text = metrics.render().decode()
            assert 'aa_background_task_failures_total{task="checkpoints:SF->NYC"} 1.0' in text
        finally:
            sup.stop()
            await asyncio.wait_for(runner, 30)
            await server.close()
    failed = [e for e in logs if e["event"] == "background_task_failed"]
    assert [e["task"] for e in failed] == ["checkpoints:SF->NYC"]
    assert "checkpoint topic unreachable" in failed[0]["error"]
    assert failed[0]["exc_info"] is not None  # the traceback, not only the message
    assert sup.health()[1]["tasks"]["checkpoints:SF->NYC"]["state"] == "stopped"


@pytest.mark.parametrize(
    "error",
    [
        LagExportError(
            "lag of SF->NYC could not be read: KafkaConnectionError('Unable to bootstrap')"
        ),
        KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 1)]"),
    ],
    ids=["explained", "kafka"],
)
async def test_background_task_failing_on_a_down_dc_logs_one_line_not_a_traceback(
    error: Exception,
) -> None:
    """With every DC down, `aa run` logged a 40-line traceback per lag retry (every few
    seconds). An error aa explains (AaError) or a Kafka client error is one line with its
    message; counting, restarting and /healthz are the same as for a crash."""
    calls = 0

    async def lag(stop: asyncio.Event) -> None:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise error
        await stop.wait()

    sup = Supervisor([], Metrics(), backoff=Backoff(initial_s=0.01, max_s=0.01))
    sup.extra_tasks.append(BackgroundTask("lag", lag))
    with capture_logs() as logs:
        runner = asyncio.create_task(sup.run(install_signals=False))
        await _until(lambda: calls >= 3)
        sup.stop()
        await asyncio.wait_for(runner, 30)
    failed = [e for e in logs if e["event"] == "background_task_failed"]
    assert len(failed) == 2
    assert all("Unable to bootstrap" in e["error"] and "exc_info" not in e for e in failed), failed
    assert sup.health()[1]["tasks"]["lag"]["restarts"] == 2


async def test_background_task_that_returns_early_is_restarted() -> None:
    runs = 0

    async def quits(stop: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs > 2:
            await stop.wait()

    metrics = Metrics()
    sup = Supervisor([], metrics, backoff=Backoff(initial_s=0.01, max_s=0.01))
    sup.extra_tasks.append(BackgroundTask("lag", quits))
    with capture_logs() as logs:
        runner = asyncio.create_task(sup.run(install_signals=False))
        await _until(lambda: runs >= 3)
        sup.stop()
        await asyncio.wait_for(runner, 30)
    assert sup.health()[1]["tasks"]["lag"]["restarts"] == 2
    assert any(e["event"] == "background_task_failed" and "returned" in e["error"] for e in logs)


def test_aiokafka_log_lines_use_the_chosen_format(capsys: pytest.CaptureFixture[str]) -> None:
    import structlog

    import aa.offsets.writer  # a module-level logger created before the format is chosen
    from aa import logs

    saved, handlers = structlog.get_config(), list(logging.getLogger().handlers)
    logs.configure(json=True)
    try:
        logging.getLogger("aiokafka.producer.sender").error("Unable to update metadata %s", "x")
        err = capsys.readouterr().err.strip().splitlines()
        assert err, "nothing logged"
        line = orjson.loads(err[-1])  # JSON, not "ERROR:aiokafka..."
        assert line["event"] == "Unable to update metadata x"
        assert line["logger"] == "aiokafka.producer.sender"
        assert line["level"] == "error"
        aa.offsets.writer._log.error("offset_sync_write_failed", error="x")
        assert orjson.loads(capsys.readouterr().err.strip().splitlines()[-1])["error"] == "x"
    finally:  # leave logging as other tests expect it
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers


async def test_failing_topic_sync_of_a_running_flow_is_shown_in_healthz() -> None:
    from aa.mirror.settings import FlowSettings

    class _Flow:
        """A flow whose periodic topic sync fails (the flow itself keeps copying)."""

        def __init__(self, settings: FlowSettings, router: object, metrics: Metrics) -> None:
            self.topic_sync_error: str | None = None

        async def run(self, stop: asyncio.Event) -> None:
            self.topic_sync_error = "KafkaConnectionError('target unreachable')"
            await stop.wait()

    settings = FlowSettings("SF", "NYC", {}, {}, group_id="g")
    sup = Supervisor([(settings, object())], Metrics(), flow_factory=_Flow)  # type: ignore[list-item,arg-type]
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: sup.health()[1]["flows"]["SF->NYC"].get("topic_sync_error"))
        assert "target unreachable" in sup.health()[1]["flows"]["SF->NYC"]["topic_sync_error"]
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)


async def _parked_somewhere_recognisable(event: asyncio.Event) -> None:
    await event.wait()


async def test_sigusr1_logs_where_every_task_waits() -> None:
    """A process that seems stuck is asked with SIGUSR1: each task's await chain is logged."""
    import os
    import signal

    sup = Supervisor([], Metrics(), shutdown_timeout_s=1)
    release = asyncio.Event()
    parked = asyncio.create_task(_parked_somewhere_recognisable(release), name="parked")
    run = asyncio.create_task(sup.run())
    await asyncio.sleep(0)  # let run() install its handlers
    with capture_logs() as logs:
        os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(100):  # the handler runs on a later loop iteration
            if any(e["event"] == "task_dump" for e in logs):
                break
            await asyncio.sleep(0.01)
    release.set()
    sup.stop()
    await run
    await parked
    dumps = {e["task"]: e["stack"] for e in logs if e["event"] == "task_dump"}
    assert any("_parked_somewhere_recognisable" in frame for frame in dumps["parked"])


async def test_lag_read_that_swallows_its_cancellation_still_fails_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dead DC (the target of an exactly-once flow, or a source behind a partition) used to
    freeze the lag gauges with no failure counted: the read hung inside aiokafka, which does
    not always let a cancellation through. The exporter must fail anyway, and keep the hung
    read referenced (not leaked, not duplicated) until it ends."""
    from aa import background
    from aa.config import read_yaml

    release = asyncio.Event()
    started = 0

    class DeadDcReader:
        def __init__(self, topology: object) -> None:
            self.topology = topology

        async def flow_lag(self, flow: object) -> list[object]:
            nonlocal started
            started += 1
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue  # what a retry loop deep in a client may do
            return []

        async def close(self) -> None:
            return None

    monkeypatch.setattr(background, "LagReader", DeadDcReader)
    topology = read_yaml(
        "datacenters: {SF: '127.0.0.1:1', NYC: '127.0.0.1:2'}\nflows: ['SF->NYC']\n"
    )
    stop = asyncio.Event()
    exporter = asyncio.create_task(
        background.export_lag(
            topology, ["SF->NYC"], Metrics(), stop, interval_s=0.05, read_timeout_s=0.2
        )
    )
    # a guard against the old hang, not a timing assertion (the read is bounded by 0.2 + 5 s);
    # not wait_for, which would wait for the swallowed cancellation forever
    done, _ = await asyncio.wait({exporter}, timeout=60)
    if not done:
        release.set()
        stop.set()
        await exporter
        pytest.fail("the lag read hung: gauges frozen and no failure counted")
    with pytest.raises(background.LagExportError, match=r"no answer within 0\.2 s"):
        exporter.result()
    assert started == 1
    assert len(background._abandoned) == 1  # still referenced while it hangs
    release.set()
    await _until(lambda: not background._abandoned)


async def test_lag_export_stamps_each_flow_it_read_and_not_the_one_whose_source_is_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gauges of a flow whose lag cannot be read keep their last value; the read time exported
    beside them is what tells a dashboard (and the catch-up line) that they are stale."""
    from aa import background
    from aa.config import read_yaml

    monkeypatch.setattr(background, "LagReader", _half_down_reader({}))
    topology = read_yaml(
        "datacenters: {SF: '127.0.0.1:1', NYC: '127.0.0.1:2', LON: '127.0.0.1:3'}\n"
        "flows: ['SF->NYC', 'LON->NYC']\n"
    )
    metrics = Metrics()
    with pytest.raises(LagExportError, match="LON->NYC"):
        await background.export_lag(
            topology, ["SF->NYC", "LON->NYC"], metrics, asyncio.Event(), interval_s=0.05
        )
    page = metrics.render().decode()
    assert 'aa_committed_lag_read_timestamp_seconds{source="SF",target="NYC"}' in page
    assert 'source="LON"' not in page


def _half_down_reader(reads: dict[str, int]) -> type:
    """A lag reader class whose flows from LON fail (LON is down); ``reads`` counts the reads
    per flow."""
    from aa.lag import PartitionLag

    class HalfDownReader:
        def __init__(self, topology: object) -> None:
            self.topology = topology

        async def flow_lag(self, flow: Any) -> list[PartitionLag]:
            reads[flow.name] = reads.get(flow.name, 0) + 1
            if flow.source == "LON":
                raise KafkaConnectionError("LON is down")
            return [PartitionLag("SF->NYC", "orders", 0, 10, 3, 1.0)]

        async def close(self) -> None:
            return None

    return HalfDownReader


def _state(sup: Supervisor, task: str) -> str | None:
    state = sup.task_states.get(task)
    return state.state if state is not None else None


async def test_background_task_refused_by_an_acl_stops_once_instead_of_restarting() -> None:
    """Heartbeats denied their topic were rewritten every backoff (up to 60 s) forever; no
    restart gets past an ACL, so the task is parked with one line saying what to grant."""
    calls = 0

    async def heartbeats(stop: asyncio.Event) -> None:
        nonlocal calls
        calls += 1
        raise TopicAuthorizationFailedError("heartbeats")

    sup = Supervisor([], Metrics(), backoff=Backoff(initial_s=0.01, max_s=0.01))
    sup.extra_tasks.append(BackgroundTask("heartbeat-write:SF", heartbeats))
    with capture_logs() as logs:
        runner = asyncio.create_task(sup.run(install_signals=False))
        await _until(lambda: calls > 3 or _state(sup, "heartbeat-write:SF") == "failed")
        sup.stop()
        await asyncio.wait_for(runner, 30)
    state = sup.task_states["heartbeat-write:SF"]
    assert (state.state, state.restarts, calls) == ("failed", 0, 1)
    assert "an ACL refused it" in (state.last_error or "")
    assert "TopicAuthorizationFailedError('heartbeats')" in (state.last_error or "")
    [stopped] = [e for e in logs if e["event"] == "background_task_stopped_restarting"]
    assert stopped["error"] == state.last_error


async def test_a_flow_whose_lag_cannot_be_read_leaves_the_other_flows_lag_fresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35, item 1: once one DC's lag could not be read, the whole lag loop backed off (up
    to 60 s) and the lag of the healthy flows went stale with it. Each flow's lag is read by
    its own supervised loop: LON down leaves SF->NYC's figure refreshed every interval."""
    from aa import background
    from aa.background import background_tasks
    from aa.config import read_yaml
    from aa.mirror.build import build_flows

    reads = {"SF->NYC": 0, "LON->NYC": 0}
    monkeypatch.setattr(background, "LagReader", _half_down_reader(reads))
    topology = read_yaml(
        "datacenters: {SF: '127.0.0.1:1', NYC: '127.0.0.1:2', LON: '127.0.0.1:3'}\n"
        "flows: ['SF->NYC', 'LON->NYC']\n"
        "heartbeats: {enabled: false}\ncheckpoints: {enabled: false}\n"
        "metrics: {lag_interval_s: 0.01}\n"
    )
    metrics = Metrics()
    flows = build_flows(topology, topology.flows)

    async def down(client: object) -> bool:
        return False

    # a failed loop waits an hour before its restart: only a loop of its own keeps SF->NYC fresh
    sup = Supervisor([], metrics, backoff=Backoff(initial_s=3600, max_s=3600), answers=down)
    sup.extra_tasks += background_tasks(topology, flows, metrics)
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: reads["SF->NYC"] > 5 * max(1, reads["LON->NYC"]))
        tasks = sup.health()[1]["tasks"]
    finally:
        sup.stop()
        await runner
    assert reads["LON->NYC"] == 1, reads  # failed once, waiting out its backoff
    assert tasks["lag:LON->NYC"]["state"] == "backoff", tasks
    assert "LON is down" in tasks["lag:LON->NYC"]["last_error"], tasks
    assert tasks["lag:SF->NYC"]["state"] == "running", tasks
    page = metrics.render().decode()
    assert 'aa_background_task_failures_total{task="lag:LON->NYC"} 1.0' in page, page
