"""Before a command talks to a DC: is it reachable? One clear error naming the DC and the fix,
instead of a client library traceback and half-started clients left unclosed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aa.admin import metadata_failure
from aa.config import Topology, client_kwargs
from aa.config.client import preflight
from aa.errors import AaError
from aa.logs import quiet_client_logs

CONNECT_TIMEOUT_S = 15.0


class ClusterUnreachableError(AaError):
    """A DC's cluster did not answer; the message names the DC, its bootstrap and the fix."""


def short_cause(exc: BaseException) -> str:
    """``KafkaConnectionError: Unable to bootstrap ...`` without the class repeated twice."""
    text = str(exc) or "no answer"
    name = type(exc).__name__
    text = text.removeprefix(f"{name}: ")
    if isinstance(exc, TimeoutError):
        text = "no answer in time"
    if text.startswith("Unable to bootstrap"):
        text = "no broker answered"
    return f"{name}: {text}"


async def probe(topology: Topology, dc: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when ``dc`` answers a metadata request, else why not."""
    failure = await metadata_failure(dc, client_kwargs(topology.datacenter(dc)), timeout_s)
    return None if failure is None else short_cause(failure)


async def require_reachable(
    topology: Topology, dcs: Iterable[str], hint: str = "", timeout_s: float = CONNECT_TIMEOUT_S
) -> None:
    """Raise :class:`ClusterUnreachableError` naming every DC of ``dcs`` that does not answer,
    or :class:`~aa.config.client.ConnectionSetupError` when one refuses aa's TLS or SASL."""
    names = list(dict.fromkeys(dcs))
    # TLS or SASL refusing aa (wrong password, untrusted certificate): its own clear error
    await preflight((topology.datacenter(dc) for dc in names), timeout_s=timeout_s)
    with quiet_client_logs():
        causes = await asyncio.gather(*(probe(topology, dc, timeout_s) for dc in names))
    down = [(dc, c) for dc, c in zip(names, causes, strict=True) if c is not None]
    if not down:
        return
    what = "; ".join(
        f"DC {dc} at {topology.datacenter(dc).bootstrap} is unreachable ({cause})"
        for dc, cause in down
    )
    fields = ", ".join(f"datacenters.{dc}.bootstrap" for dc, _ in down)
    fix = f"start it or fix {fields}" + (f", {hint}" if hint else "")
    raise ClusterUnreachableError(f"{what}: {fix}")


def known_dc(topology: Topology, name: str, option: str) -> str:
    """``name`` if the topology has that DC, else an error naming ``option`` and the choices."""
    if name not in topology.dc_names:
        raise AaError(f"{option} {name}: unknown DC; known: {', '.join(topology.dc_names)}")
    return name
