"""Ctrl-C during the demo's story stops it, even when a library caught the cancellation that
asyncio sends on SIGINT (seen under load: Ctrl-C at step 3, the demo ran on to step 6)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import examples.demo
import examples.demo_story
import examples.steps


def _without_clusters(monkeypatch: pytest.MonkeyPatch, story: Any = None) -> list[str]:
    """The demo with no broker and no mirror (and ``story`` told, if given); what
    ``stop_everything`` was called for."""
    stopped: list[str] = []
    if story is not None:
        monkeypatch.setattr(examples.demo_story, "story", story)

    async def no_topic(clusters: dict[str, str]) -> None:
        return None

    monkeypatch.setattr(examples.demo, "ensure_topic", no_topic)
    monkeypatch.setattr(examples.demo.Demo, "start_clusters", lambda self, free: None)
    monkeypatch.setattr(examples.demo.Demo, "start_mirror", lambda self, dc, config: None)
    monkeypatch.setattr(examples.demo.Demo, "check_mirrors", lambda self: None)
    monkeypatch.setattr(
        examples.demo.Demo, "stop_everything", lambda self: stopped.append("everything")
    )
    return stopped


def _ctrl_c_after(step: threading.Event, send: Callable[[], None]) -> Callable[[], None]:
    def ctrl_c() -> None:
        if step.wait(30):
            send()

    return ctrl_c


def _interrupted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ctrl_c: Callable[[], None]
) -> tuple[int, str]:
    """The demo's exit code and output, ``ctrl_c`` running beside it on a thread."""
    killer = threading.Thread(target=ctrl_c, daemon=True)
    killer.start()
    code = examples.demo.main(["--home", str(tmp_path / "dev"), "--out", str(tmp_path / "out")])
    killer.join(5)
    out = capsys.readouterr().out
    assert "interrupted: stopping what the demo started" in out, out
    return code, out


@pytest.mark.parametrize("then", ["next-step", "waits-again"])
def test_ctrl_c_in_a_story_that_swallows_its_cancellation_stops_it(
    then: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``next-step``: the story goes on to its next step; ``waits-again``: it waits on (no
    step boundary comes): the cancellation is repeated until the story ends."""
    reached: list[str] = []
    in_step = threading.Event()

    async def story(demo: Any, config: Any, args: Any) -> None:
        examples.steps.say("3. writing")
        in_step.set()
        with contextlib.suppress(asyncio.CancelledError):  # a library that loses it
            await asyncio.sleep(60)
        if then == "waits-again":
            await asyncio.sleep(60)
        examples.steps.say("4. copying")
        reached.append("4")

    stopped = _without_clusters(monkeypatch, story)
    ctrl_c = _ctrl_c_after(in_step, lambda: os.kill(os.getpid(), signal.SIGINT))
    code, out = _interrupted(tmp_path, capsys, ctrl_c)
    assert reached == [], out  # step 4 never ran
    assert code == 130, out
    assert stopped == ["everything"], out


@pytest.mark.timeout(120)
def test_ctrl_c_during_the_reconcile_job_stops_the_job_and_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job ran in a thread: Ctrl-C waited for it to end on its own (minutes of Spark),
    so a test's Ctrl-C past its bound was followed by a kill that left the mirrors running."""
    log = tmp_path / "out" / "reconcile.log"

    async def step_done(*args: Any, **kwargs: Any) -> None:
        return None

    for step in ("write_conflicts", "wait_replicated", "converged_view", "dc_goes_down"):
        monkeypatch.setattr(examples.demo_story, step, step_done)
    monkeypatch.setattr(examples.demo_story, "read_metrics", lambda demo, config: None)
    job = ["sh", "-c", "echo $$; exec sleep 600"]  # a job that would run 10 minutes
    monkeypatch.setattr(examples.demo_story, "reconcile_command", lambda config, out: job)
    stopped = _without_clusters(monkeypatch)
    pids: list[int] = []

    def ctrl_c_once_the_job_runs() -> None:
        for _ in range(600):
            text = log.read_text() if log.exists() else ""
            if text.strip():
                pids.append(int(text.split()[0]))
                os.kill(os.getpid(), signal.SIGINT)
                return
            threading.Event().wait(0.1)

    code, out = _interrupted(tmp_path, capsys, ctrl_c_once_the_job_runs)
    assert code == 130, out
    assert stopped == ["everything"], out
    [pid] = pids
    assert not Path(f"/proc/{pid}").exists(), "the job still runs"


@pytest.mark.timeout(120)
def test_ctrl_c_that_the_kernel_hands_to_another_thread_stops_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A terminal's Ctrl-C goes to the process; the kernel may hand it to any of its threads
    (the demo's steps run in threads, so does a job's wait). Python then runs its handler only
    once the main thread wakes: an event loop asleep in select with no timer due slept on (the
    test above waited out its story's 60 s sleep, most runs)."""
    in_step = threading.Event()

    async def story(demo: Any, config: Any, args: Any) -> None:
        examples.steps.say("3. writing")
        in_step.set()
        await asyncio.Event().wait()  # nothing else wakes the loop

    stopped = _without_clusters(monkeypatch, story)
    to_this_thread = lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # noqa: E731
    code, out = _interrupted(tmp_path, capsys, _ctrl_c_after(in_step, to_this_thread))
    assert code == 130, out
    assert stopped == ["everything"], out
