"""Run one `aa` command to completion as a subprocess (the way operators run the tools)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CliResult:
    code: int
    out: str
    err: str


CLI_HANG_S = 600.0
"""A command's hang guard: `aa lag` over Kerberos took over 120 s (the guard before) with two
suites on the 2-core machine (load 50-90); quietly it takes seconds."""


async def aa_cli(*args: str, timeout: float = CLI_HANG_S) -> CliResult:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aa.cli.main",
        "--log-level",
        "WARNING",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except BaseException:
        # timed out, or the test was stopped (pytest-timeout): the command goes too, and its
        # pipes are closed on this loop (left open, they were closed when collected, on a
        # closed loop, failing whichever test ran then with 'Event loop is closed')
        if proc.returncode is None:
            proc.kill()
        await asyncio.shield(proc.wait())
        raise
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())
