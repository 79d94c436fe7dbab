"""Never a restart loop: a flow (or background loop) that crashes the same way on every run — a
defect, like the OverflowError that Kafka 3.9's timestamp defaults caused in the batch path — is
restarted a few times, then parked as ``failed`` with one clear message and its traceback, not
restarted with backoff forever. A flow that fails because a DC is down (a Kafka client error, an
explained aa error) is not a crash: it keeps being restarted until the DC is back."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.errors import CorruptRecordException, KafkaConnectionError
from structlog.testing import capture_logs

from aa.background import BackgroundTask
from aa.mirror import restarts as restarts_module
from aa.mirror import supervisor as supervisor_module
from aa.mirror.settings import FlowSettings
from aa.mirror.supervisor import Backoff, Supervisor
from aa.observe.metrics import Metrics

pytestmark = pytest.mark.unit

FAST = Backoff(initial_s=0.001, max_s=0.001)
NAME = "checkpoints:SF->NYC"


async def _until(check: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() >= deadline:  # a polling deadline, not a timing
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.001)


def _flows_raising(errors: Callable[[int], BaseException | None]) -> tuple[type, list[int]]:
    """A flow class whose n-th run (from 1) raises ``errors(n)``, or runs until stopped."""
    runs: list[int] = []

    class _Flow:
        def __init__(self, settings: FlowSettings, router: object, metrics: Metrics) -> None:
            pass

        async def run(self, stop: asyncio.Event) -> None:
            runs.append(len(runs) + 1)
            error = errors(len(runs))
            if error is not None:
                raise error
            await stop.wait()

    return _Flow, runs


def _supervisor(flow: type) -> Supervisor:
    settings = FlowSettings("SF", "NYC", {}, {}, group_id="g")
    return Supervisor([(settings, object())], Metrics(), backoff=FAST, flow_factory=flow)  # type: ignore[list-item]


async def test_flow_crashing_the_same_way_every_run_is_parked_failed_not_restarted_forever() -> (
    None
):
    flow, runs = _flows_raising(lambda n: OverflowError("int too big to convert"))
    sup = _supervisor(flow)
    with capture_logs() as logs:
        runner = asyncio.create_task(sup.run(install_signals=False))
        try:
            await _until(lambda: sup.states["SF->NYC"].state == "failed")
            ok, detail = sup.health()
            assert not ok
            error = detail["flows"]["SF->NYC"]["last_error"]
            assert "OverflowError" in error
            assert "int too big to convert" in error
            assert "crashed 5 times in a row" in error
            assert "not restarted" in error
        finally:
            sup.stop()
            await asyncio.wait_for(runner, 30)
    assert len(runs) == supervisor_module.CRASH_LIMIT == 5
    crashed = [e for e in logs if e["event"] == "flow_crashed"]
    assert len(crashed) == 5
    assert all(e["exc_info"] is not None for e in crashed)
    failed = [e for e in logs if e["event"] == "flow_failed"]
    assert len(failed) == 1
    assert failed[0]["kind"] == "crash"
    assert "OverflowError" in failed[0]["error"]
    assert sum(e["event"] == "flow_restarting" for e in logs) == 4
    assert sup.states["SF->NYC"].state == "failed"  # stopping does not hide the failure


async def test_flow_failing_on_a_down_dc_keeps_restarting_past_the_crash_limit() -> None:
    down = KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 1)]")
    flow, runs = _flows_raising(lambda n: down if n <= 8 else None)
    sup = _supervisor(flow)
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: len(runs) == 9 and sup.states["SF->NYC"].state == "running")
        assert sup.states["SF->NYC"].restarts == 8
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)


async def test_a_run_that_copied_for_a_while_resets_the_crash_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Crashes far apart (each after a healthy minute of copying) are not a loop."""
    now = [1_000.0]
    clock = types.SimpleNamespace(time=lambda: now[0])
    monkeypatch.setattr(supervisor_module, "time", clock)
    monkeypatch.setattr(restarts_module, "time", clock)  # the crash streak's clock

    def crash(n: int) -> BaseException:
        if n == 4:
            now[0] += 120.0  # the 4th run copies for two minutes before it crashes
        return ValueError(f"crash {n}")

    flow, runs = _flows_raising(crash)
    sup = _supervisor(flow)
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: sup.states["SF->NYC"].state == "failed")
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)
    assert len(runs) == 3 + 5  # three crashes, a healthy run, then five in a row


@pytest.mark.parametrize(
    "error",
    [
        TypeError("unsupported operand type(s) for +: 'int' and 'NoneType'"),
        # a checkpoint or heartbeat reader meets a batch failing its CRC in an internal topic:
        # a Kafka error, so it was retried like a DC down, every 60 s forever; damage repeats
        CorruptRecordException("Invalid CRC - TopicPartition(topic='aa.offset-syncs')"),
    ],
    ids=["defect", "damaged-internal-batch"],
)
async def test_background_task_crashing_every_run_is_parked_failed_and_degrades_health(
    error: Exception,
) -> None:
    runs = 0

    async def broken(stop: asyncio.Event) -> Any:
        nonlocal runs
        runs += 1
        raise error

    sup = Supervisor([], Metrics(), backoff=FAST)
    sup.extra_tasks.append(BackgroundTask(NAME, broken))
    with capture_logs() as logs:
        runner = asyncio.create_task(sup.run(install_signals=False))
        try:
            await _until(lambda: getattr(sup.task_states.get(NAME), "state", None) == "failed")
            _, detail = sup.health()
            assert detail["degraded"]
            assert "crashed 5 times in a row" in detail["tasks"][NAME]["last_error"]
        finally:
            sup.stop()
            await asyncio.wait_for(runner, 30)
    assert runs == 5
    assert sum(e["event"] == "background_task_stopped_restarting" for e in logs) == 1


def test_backoff_after_a_day_of_failed_restarts_stays_at_its_maximum() -> None:
    """A DC down for a day fails its flows' restarts ~1,440 times at the 60 s maximum; the
    1,025th computed 2.0 ** 1024, raised OverflowError in the flow's keeper and so took down
    every flow of the process."""
    backoff = Backoff()
    assert backoff.delay(1_025) == backoff.delay(100_000) == 60.0


def _probing(flow: type | None, answers: Callable[[Any], Any]) -> Supervisor:
    """A supervisor (of one flow, or of none) whose backoff is an hour and whose DC probe is
    ``answers``."""
    settings = FlowSettings("SF", "NYC", {}, {}, group_id="g")
    return Supervisor(
        [(settings, object())] if flow is not None else [],  # type: ignore[list-item]
        Metrics(),
        backoff=Backoff(initial_s=3600, max_s=3600),
        flow_factory=flow or object,  # type: ignore[arg-type]
        probe_interval_s=0.001,
        answers=answers,
    )


async def test_flow_waiting_out_a_down_dc_restarts_as_soon_as_the_dc_answers_again() -> None:
    """The backoff grows to 60 s while a DC is down; once it answers again the flow restarts
    at the next probe instead of sleeping out the rest of the backoff (here an hour)."""
    down = KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 1)]")
    flow, runs = _flows_raising(lambda n: down if n <= 2 else None)
    calls = 0

    async def reachable(client: Any) -> bool:
        """Both DCs (source, target) are asked at each probe: down, up, down, up."""
        nonlocal calls
        calls += 1
        return (calls - 1) // 2 % 2 == 1

    sup = _probing(flow, reachable)
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: len(runs) == 3 and sup.states["SF->NYC"].state == "running")
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)


async def test_a_retriable_failure_with_both_dcs_answering_waits_out_its_backoff() -> None:
    """Restarting early only when a DC was seen down and then answers: a failure with both DCs
    up (a refused offset-sync write, say) keeps its backoff, or it would restart every probe."""
    refused = KafkaConnectionError("Connection reset")
    flow, runs = _flows_raising(lambda n: refused)
    probes = 0

    async def reachable(client: Any) -> bool:
        nonlocal probes
        probes += 1
        return True

    sup = _probing(flow, reachable)
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: probes >= 20)
        assert len(runs) == 1
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)


async def test_dc_answers_is_false_for_a_closed_port() -> None:
    assert not await supervisor_module.dc_answers(
        {"bootstrap_servers": "127.0.0.1:1"}, timeout_s=2.0
    )


async def test_background_loop_waiting_out_a_down_dc_restarts_as_soon_as_the_dc_answers() -> None:
    """Heartbeats, checkpoints and lag export too: a heartbeat writer backing off for 60 s
    after its DC returned would show the other DCs a stale heartbeat for that long."""
    runs = 0
    answers = iter([False, True, False, True])  # down, back; down, back

    async def heartbeat(stop: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs <= 2:
            raise KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 1)]")
        await stop.wait()

    async def probe(client: Any) -> bool:
        assert client == {"bootstrap_servers": "127.0.0.1:1"}
        return next(answers, True)

    sup = _probing(None, probe)
    sup.extra_tasks.append(
        BackgroundTask("heartbeat-write:SF", heartbeat, ({"bootstrap_servers": "127.0.0.1:1"},))
    )
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: runs == 3)
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)


async def test_a_flow_stops_for_good_when_the_installed_aiokafka_lacks_what_aa_uses() -> None:
    """An aiokafka that moved an internal aa relies on fails every run the same way: the flow
    stops at once with the message naming it (seen with 0.15.0rc1: restarted every second)."""
    from aa.kafka.private import ClientChanged

    moved = "aiokafka 9 has moved what aa relies on: aiokafka.x._y (to fetch)"
    flow, runs = _flows_raising(lambda n: ClientChanged(moved))
    sup = _supervisor(flow)
    runner = asyncio.create_task(sup.run(install_signals=False))
    try:
        await _until(lambda: sup.states["SF->NYC"].state in ("failed", "backoff") and runs)
        await _until(lambda: sup.states["SF->NYC"].state == "failed" or len(runs) > 3)
        assert runs == [1]
        assert sup.states["SF->NYC"].state == "failed"
        assert "aiokafka.x._y" in (sup.states["SF->NYC"].last_error or "")
    finally:
        sup.stop()
        await asyncio.wait_for(runner, 30)
