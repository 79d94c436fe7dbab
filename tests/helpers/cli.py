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


async def aa_cli(*args: str, timeout: float = 120.0) -> CliResult:
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
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())
