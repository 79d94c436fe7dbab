"""Ctrl-C during the demo's story stops it, even when a library caught the cancellation that
asyncio sends on SIGINT (seen under load: Ctrl-C at step 3, the demo ran on to step 6)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

import examples.demo
import examples.demo_story
import examples.steps


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
    stopped: list[str] = []
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

    async def no_topic(clusters: dict[str, str]) -> None:
        return None

    monkeypatch.setattr(examples.demo_story, "story", story)
    monkeypatch.setattr(examples.demo, "ensure_topic", no_topic)
    monkeypatch.setattr(examples.demo.Demo, "start_clusters", lambda self, free: None)
    monkeypatch.setattr(examples.demo.Demo, "start_mirror", lambda self, dc, config: None)
    monkeypatch.setattr(
        examples.demo.Demo, "stop_everything", lambda self: stopped.append("everything")
    )

    def ctrl_c() -> None:
        if in_step.wait(30):
            os.kill(os.getpid(), signal.SIGINT)

    killer = threading.Thread(target=ctrl_c, daemon=True)
    killer.start()
    code = examples.demo.main(["--home", str(tmp_path / "dev"), "--out", str(tmp_path / "out")])
    killer.join(5)
    out = capsys.readouterr().out
    assert reached == [], out  # step 4 never ran
    assert code == 130, out
    assert "interrupted: stopping what the demo started" in out, out
    assert stopped == ["everything"], out
