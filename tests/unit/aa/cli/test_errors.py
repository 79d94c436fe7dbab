"""A user's mistake or a down DC gives one line naming the cause and the fix, and exit 2 — never
a traceback (issue 12, item 6). No broker: the DCs point at ports where nothing listens."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from aa.cli.failover import legend
from aa.cli.main import build_parser, glue_dash_values, main
from aa.failover.plan import Move
from tests.helpers.cli import aa_cli
from tests.helpers.processes import write_topology

pytestmark = pytest.mark.unit


def _dead_ports(n: int) -> list[int]:
    """Ports free right now: nothing listens there, so a connection is refused."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@pytest.fixture
def down_topology(tmp_path: Path) -> Path:
    sf, nyc = _dead_ports(2)
    return write_topology(
        tmp_path / "topology.yaml",
        {"SF": f"127.0.0.1:{sf}", "NYC": f"127.0.0.1:{nyc}"},
        flows="full-mesh",
        topics={"include": ["orders"]},
    )


def _assert_one_clear_line(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err, err
    assert "Unclosed" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("aa: error: "), err
    for n in needles:
        assert n in lines[0], err


def test_failover_at_minus_two_minutes_parses_as_the_docs_write_it() -> None:
    argv = ["failover", "--config", "t.yaml", "--group", "g", "--to", "NYC", "--at", "-2m"]
    args = build_parser().parse_args(glue_dash_values(argv))
    assert args.at == "-2m"
    assert glue_dash_values(["--at", "--topic"]) == ["--at", "--topic"]


@pytest.mark.parametrize(
    ("command", "down"),
    [
        (["failover", "--group", "g", "--to", "NYC", "--at", "-2m"], ["NYC"]),
        (["failover", "--group", "g", "--to", "NYC", "--translate"], ["NYC"]),
        (["failback", "--group", "g", "--to", "SF"], ["SF", "NYC"]),
        (["lag"], ["SF", "NYC"]),
        (["offsets", "translate", "--group", "g", "--from", "SF", "--to", "NYC"], ["SF", "NYC"]),
        (["plan"], ["SF", "NYC"]),
        (["run", "--dc", "NYC", "--metrics-port", "0"], ["SF", "NYC"]),
        (["run", "--flow", "SF->NYC", "--metrics-port", "0"], ["SF", "NYC"]),
    ],
    ids=[
        "failover-at",
        "failover-translate",
        "failback",
        "lag",
        "offsets-translate",
        "plan",
        "run-dc",
        "run-flow",
    ],
)
async def test_unreachable_dc_is_one_line_naming_the_dc_exit_2(
    down_topology: Path, command: list[str], down: list[str]
) -> None:
    where = 2 if command[0] == "offsets" else 1
    argv = [*command[:where], "--config", str(down_topology), *command[where:]]
    # `aa run` retried "Unable to bootstrap" forever (issue 35, item 1): bounded here
    result = await aa_cli(*argv, timeout=90)
    _assert_one_clear_line(
        result.code, result.err, *(f"DC {dc}" for dc in down), "unreachable", ".bootstrap"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["failover", "--group", "g", "--to", "XX", "--translate"],
        ["failover", "--group", "g", "--to", "NYC", "--from", "XX", "--translate"],
        ["failback", "--group", "g", "--to", "XX"],
        ["offsets", "translate", "--group", "g", "--from", "XX", "--to", "NYC"],
        ["lag", "--flow", "XX->NYC"],
    ],
    ids=["failover-to", "failover-from", "failback-to", "offsets-from", "lag-flow"],
)
def test_unknown_dc_or_flow_is_one_line_naming_the_option_exit_2(
    down_topology: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # in-process: the check happens before any connection
    code = main([*command, "--config", str(down_topology)])
    _assert_one_clear_line(
        code, capsys.readouterr().err, "XX", "known" if "lag" not in command else "flows"
    )


def test_failover_plan_explains_every_basis_label_it_shows() -> None:
    moves = [
        Move("orders", 0, 10, None, "exact (SF orders/0@10)"),
        Move("orders", 1, 11, None, "checkpoint min-of-origins (SF orders/1@9)"),
        Move("orders", 2, 12, None, "ahead (SF orders/2@40)"),
        Move("orders", 3, None, None, "gap"),
    ]
    text = legend(moves)
    for word in ("exact:", "checkpoint:", "min-of-origins:", "ahead:", "gap:"):
        assert word in text, text
    assert "time:" not in text


@pytest.mark.parametrize("command", [["run"], ["lag"], ["pause"], ["limit", "--reset"]])
def test_a_flow_cut_by_the_shell_says_to_quote_it(
    down_topology: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35, item 6: `--flow SF->NYC` unquoted is a redirection: aa got `SF-` (and the
    shell wrote a file `NYC`), and said only "no such flow"."""
    code = main([*command, "--config", str(down_topology), "--flow", "SF-"])
    _assert_one_clear_line(code, capsys.readouterr().err, "redirection", "'SF->NYC'")
