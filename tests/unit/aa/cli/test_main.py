"""The `aa` command itself (issue 35, items 4 and 8): help that reads as plain text with every
option explained, a validated --log-level, and a closed output pipe that is not reported as a
network error."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aa.cli.main import build_parser, main

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("aa",)
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = dict(_commands(build_parser()))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_is_plain_text_and_explains_every_option(command: str) -> None:
    """`plan --help` and `status --help` showed reStructuredText (``aa plan``); `--group` had no
    help in failover, failback and offsets translate; `dev up` gave no default ports."""
    parser = COMMANDS[command]
    text = parser.format_help()
    for markup in ("``", "`", ":func:", ":class:", ":data:"):
        assert markup not in text, f"{command} --help shows {markup!r}:\n{text}"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        assert action.help, f"{command} {'/'.join(action.option_strings)}: no help text"


def test_dev_up_help_gives_the_default_ports() -> None:
    text = " ".join(COMMANDS["aa dev up"].format_help().split())
    assert "default 19092" in text, text
    assert "default 10000" in text, text


@pytest.mark.parametrize("action", ["status", "down"])
def test_dev_home_works_after_the_action_too(action: str, tmp_path: Path) -> None:
    """`aa dev status --home X` failed with `unrecognized arguments` without saying that
    --home goes before the action; it is accepted in both places."""
    before = build_parser().parse_args(["dev", "--home", str(tmp_path), action])
    after = build_parser().parse_args(["dev", action, "--home", str(tmp_path)])
    assert before.home == after.home == tmp_path


def test_log_level_outside_the_levels_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(ROOT / "examples" / "topology.yaml")
    with pytest.raises(SystemExit) as refused:
        main(["--log-level", "LOUD", "plan", "--config", config, "--offline"])
    assert refused.value.code == 2
    assert "LOUD" in capsys.readouterr().err
    assert main(["--log-level", "debug", "plan", "--config", config, "--offline"]) == 0


def test_log_level_from_the_environment_is_checked_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AA_LOG_LEVEL", "LOUD")
    config = str(ROOT / "examples" / "topology.yaml")
    assert main(["plan", "--config", config, "--offline"]) == 2
    err = capsys.readouterr().err
    assert "AA_LOG_LEVEL LOUD" in err, err
    assert "DEBUG, INFO, WARNING, ERROR" in err, err


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_a_closed_output_pipe_is_not_a_network_error(level: str) -> None:
    """`aa plan … | true` exited 2 with "check that the DCs are reachable" (and a traceback at
    DEBUG): the reader going away is not a network error. Exit 141, as a tool stopped by
    SIGPIPE, and nothing on stderr."""
    config = str(ROOT / "examples" / "topology.yaml")
    argv = ["--log-level", level, "plan", "--config", config, "--offline"]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "aa.cli.main", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == "", done.stderr
