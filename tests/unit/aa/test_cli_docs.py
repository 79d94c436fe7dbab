"""docs/cli.md and the README say true things about the `aa` command (issue 35): every `aa` line
in their code blocks names commands and options aa has, is quoted as a shell needs (unquoted,
`--flow SF->NYC` is a redirection), and parses when it is a whole command; the error lines are
the messages aa prints; the exit-code table is the codes aa returns."""

from __future__ import annotations

import itertools
import re
import shlex
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from aa.cli import main as cli_main
from aa.cli import run as cli_run
from aa.cli.groups import group_hint, unknown_group_error
from aa.cli.main import build_parser, glue_dash_values, main
from tests.helpers.cli import aa_cli
from tests.helpers.processes import write_topology
from tests.unit.aa.cli.test_errors import _dead_ports

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PAGES = ("README.md", "docs/cli.md")
SYNOPSIS = re.compile(r"[\[\]()]|\.\.\.|\|")


def _aa_lines() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        text = (ROOT / page).read_text()
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.DOTALL):
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                if line.startswith("aa ") and not line.startswith("aa: "):
                    yield page, line


LINES = list(_aa_lines())


def _tokens(line: str) -> list[str]:
    """The words of ``line`` up to its first shell operator or comment, as a shell splits
    them (an unquoted ``>`` is an operator there)."""
    words = _shell_words(line)
    for i, word in enumerate(words):
        if word.startswith(("&", ";", "|", ">", "<")):
            # `2> file`: the 2 is the redirected descriptor, not an argument
            return words[: i - 1] if word.startswith(">") and words[i - 1].isdigit() else words[:i]
    return words


def _shell_words(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars="<>|&;")
    lex.whitespace_split = True
    return list(lex)


def _parsers(words: list[str]) -> list[object]:
    """The parsers the words go through: aa, its command, the command's action."""
    chain: list[object] = [build_parser()]
    for w in words:
        subs = [a for a in chain[-1]._actions if a.__class__.__name__ == "_SubParsersAction"]  # type: ignore[attr-defined]
        if subs and w in subs[0].choices:
            chain.append(subs[0].choices[w])
    return chain


def test_the_pages_have_aa_lines() -> None:
    assert len([p for p, _ in LINES if p == "docs/cli.md"]) >= 10
    assert len([p for p, _ in LINES if p == "README.md"]) >= 8


@pytest.mark.parametrize(
    ("page", "line"), LINES, ids=[f"{p}:{i}" for i, (p, _) in enumerate(LINES)]
)
def test_every_aa_line_is_quoted_and_names_real_options(page: str, line: str) -> None:
    everything = _shell_words(line)
    for before, after in itertools.pairwise(everything):
        assert not (before.endswith("-") and after.startswith(">")), (
            f"{page}: {line!r}: an unquoted arrow is a shell redirection; quote it ('A->B')"
        )
    words = _tokens(line)[1:]
    chain = _parsers(words)
    known = {o for p in chain for a in p._actions for o in a.option_strings}  # type: ignore[attr-defined]
    for w in words:
        option = w.strip("[]()").split("=")[0]
        if option.startswith("--") and option != "--":
            assert option in known, f"{page}: {line!r}: no option {option}"
    if not SYNOPSIS.search(" ".join(words)):  # a whole command, not a synopsis
        args = build_parser().parse_args(glue_dash_values(words))
        assert getattr(args, "func", None), f"{page}: {line!r} names no command"


def _error_lines() -> list[str]:
    text = (ROOT / "docs" / "cli.md").read_text()
    return [
        line.removeprefix("aa: error: ")
        for line in text.splitlines()
        if line.startswith("aa: error:")
    ]


def _one_error(err: str) -> str:
    [line] = [x for x in err.splitlines() if x.startswith("aa: error: ")]
    return line.removeprefix("aa: error: ")


async def test_the_documented_errors_are_the_messages_aa_prints(tmp_path: Path) -> None:
    documented = _error_lines()
    assert len(documented) == 4, documented
    examples = str(ROOT / "examples" / "topology.yaml")
    unknown = await aa_cli(
        "failover", "--config", examples, "--group", "g", "--to", "XX", "--translate"
    )
    sf, nyc = _dead_ports(2)
    down = write_topology(
        tmp_path / "t.yaml", {"SF": f"127.0.0.1:{sf}", "NYC": f"127.0.0.1:{nyc}"}, flows="full-mesh"
    )
    unreachable = await aa_cli(
        "failover", "--config", str(down), "--group", "g", "--to", "NYC", "--translate"
    )
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        taken = await aa_cli(
            "run", "--config", str(down), "--dc", "NYC", "--metrics-port", str(port)
        )
    printed = [
        _one_error(unreachable.err).replace(f"127.0.0.1:{nyc}", "10.0.0.7:9092"),
        _one_error(unknown.err),
        _one_error(taken.err).replace(f":{port} ", ":9464 "),
        str(
            unknown_group_error(
                "billng", "NYC", group_hint("billng", "NYC", ["billing", "shipping"])
            )
        ),
    ]
    assert printed == documented


def test_the_exit_code_table_is_the_codes_aa_returns() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    table = dict(re.findall(r"^\| (\d+) \| (.*) \|$", text, re.M))
    assert set(table) == {"0", "1", "2", "130", "141", "143"}, table
    assert cli_run.INTERRUPTED == 130
    assert cli_main.CLOSED_PIPE_EXIT == 141
    assert cli_main.STOPPED_EXIT == 143
    assert "every flow running" in table["0"] or "every flow known to run" in table["0"]


def test_a_usage_mistake_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["run", "--config", "x.yaml"])  # neither --dc nor --flow
    assert usage.value.code == 2
    assert "one of the arguments --dc --flow is required" in capsys.readouterr().err
