"""What every security mechanism must prove on real brokers (issue 33): `aa run` in both DCs
copies records both ways over the mechanism, `aa plan` and `aa lag` answer, `aa failover
--execute` moves a consumer group to the other DC, and no secret appears in any output. The
test writes and reads through each broker's unauthenticated internal listener: only aa uses
the secure ones."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from aa.offsets.groups import group_offsets
from tests.helpers.cli import CliResult, aa_cli
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.processes import AaProcess
from tests.helpers.secure_broker import SecurePeers


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as answer:
        data: bytes = answer.read()
        return data


def no_secret(where: str, text: str | bytes, secrets: Iterable[str]) -> None:
    data = text.encode() if isinstance(text, str) else text
    for secret in secrets:
        assert secret.encode() not in data, f"a secret leaked into {where}"


def ok(result: CliResult, what: str, secrets: Iterable[str]) -> str:
    assert result.code == 0, f"{what}: {result}"
    assert "Traceback" not in result.err, result.err
    no_secret(what, result.out + result.err, secrets)
    return result.out


async def copy_both_ways_and_fail_over(
    peers: SecurePeers,
    config: Path,
    topic: str,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    secrets: Iterable[str],
    *,
    records: int = 100,
    while_running: Callable[[], object] | None = None,
) -> list[AaProcess]:
    """The proof above; returns the (stopped) `aa run` processes for more checks."""
    secrets = tuple(secrets)
    sf, nyc = peers.sf.cluster.bootstrap, peers.nyc.cluster.bootstrap  # internal listeners
    since = int(time.time() * 1000) - 60_000
    for b in (sf, nyc):
        await create_topic(b, topic, partitions=2)
    now = int(time.time() * 1000)
    for b, tag in ((sf, "sf"), (nyc, "nyc")):
        recs = [
            Rec(f"k{i}".encode(), f"{tag}:{i}".encode(), timestamp_ms=now) for i in range(records)
        ]
        await produce(b, topic, recs)
    procs = [
        AaProcess(["run", "--config", str(config), "--dc", dc, "--metrics-port", "0"],
                  tmp_path / f"{dc}.log")
        for dc in ("SF", "NYC")
    ]  # fmt: skip
    try:
        for b in (sf, nyc):
            got = await consume_all(b, topic, count=2 * records, timeout=180, settle=1.0)
            assert len({r.value for r in got}) == 2 * records
        for p in procs:  # the metrics endpoint: no secret either
            url = re.search(r'"metrics": "(http://[^"]+)"', p.output())
            assert url is not None, p.output()[-2000:]
            body = await asyncio.to_thread(_fetch, url.group(1))
            no_secret(f"the metrics of aa run ({p.log_path.name})", body, secrets)
        if while_running is not None:
            result = while_running()
            if hasattr(result, "__await__"):
                await result  # type: ignore[misc]
        assert ok(await aa_cli("plan", "--config", str(config)), "aa plan", secrets)
        lag = ok(await aa_cli("lag", "--config", str(config)), "aa lag", secrets)
        assert "SF->NYC" in lag
        group = unique_name("app")
        failover = await aa_cli(
            "failover", "--config", str(config), "--group", group, "--to", "NYC",
            "--at", str(since), "--topic", topic, "--execute", "--create-group",
        )  # fmt: skip
        ok(failover, "aa failover --execute", secrets)
        assert len(await group_offsets({"bootstrap_servers": nyc}, group)) == 2
    finally:
        for p in procs:
            p.stop()
    for p in procs:
        assert p.proc.returncode == 0, p.output()[-3000:]
        no_secret(f"the log of aa run ({p.log_path.name})", p.output(), secrets)
    return procs


async def one_clear_error(
    config: str,
    message: str,
    secrets: Iterable[str],
    case: str,
    *,
    dc: str = "NYC",
    commands: Iterable[str] = ("run",),
) -> None:
    """Each of ``commands`` (default `aa run --dc dc`) exits 2 with one error line matching
    ``message``, no traceback and no secret: `aa run` exits instead of restarting its flows
    forever; the other commands share its first connection (preflight), which
    test_security.py runs for `plan` and `lag` too."""
    for command in commands:
        args = [command, "--config", config]
        if command == "run":
            args += ["--dc", dc, "--metrics-port", "0"]
        r = await aa_cli(*args, timeout=180)
        assert r.code == 2, (args, r)
        assert "Traceback" not in r.err, r.err
        errors = [line for line in r.err.splitlines() if "error" in line.lower()]
        assert len(errors) == 1, (args, r.err)
        assert re.search(message, errors[0]), (args, errors[0])
        no_secret(f"aa {command} ({case})", r.out + r.err, secrets)
