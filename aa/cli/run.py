"""`aa run`: the mirror process of one DC (all its inbound flows) or of one flow."""

from __future__ import annotations

import argparse
import asyncio
import functools
import signal
import socket
from collections.abc import Coroutine, Sequence
from typing import Any

from aa.background import LAG_READ_SLACK_S, BackgroundTask, background_tasks
from aa.cli.catchup import CatchUp, catch_up_task
from aa.cli.options import topology_command
from aa.cli.plan import list_topics
from aa.config import Flow, Topology, load_config
from aa.errors import AaError
from aa.kafka import private
from aa.lag import holds_heartbeats
from aa.lifecycle import loop_signals
from aa.logs import get_logger
from aa.mirror.build import build_flows, select_flows
from aa.mirror.operate import RunningProcess
from aa.mirror.supervisor import Supervisor
from aa.observe.admin import TOKEN_ENV, AdminApi, token_from
from aa.observe.http import MetricsServer
from aa.observe.metrics import Metrics
from aa.observe.tls import is_mutual, server_context
from aa.policy.plan import build_plan

log = get_logger("aa.run")


def register(sub: Any) -> None:
    p = topology_command(sub, "run", "run mirror flows: every inbound flow of a DC, or one flow")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--dc", help="run every flow into this DC (run it in that DC)")
    who.add_argument("--flow", help="run one flow, e.g. SF->NYC")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="Prometheus /metrics and /healthz port (default: from the config; 0 picks a free one)",
    )
    p.add_argument(
        "--shutdown-timeout",
        type=float,
        default=30.0,
        help="seconds to finish in-flight batches and commit on SIGTERM/SIGINT",
    )
    p.set_defaults(func=_run)


INTERRUPTED = 130
"""Exit code after Ctrl-C (SIGINT); SIGTERM, the way services are stopped, exits 0."""

START_HINT = (
    "aa run needs every DC of its flows to answer when it starts (once started, a DC that goes "
    "away is waited out); to run the other flows meanwhile, start aa run --flow 'A->B' for "
    "flows between DCs that answer"
)


def _run(args: argparse.Namespace) -> int:
    private.check()  # an aiokafka that moved what aa uses: one error, before any DC is asked
    topology = load_config(args.config)
    selected = select_flows(topology, dc=args.dc, flow=args.flow)
    flows = build_flows(topology, selected)  # a budget too small for them fails here, offline
    # a DC that never answered (wrong address or port, TLS or SASL refused) is one error now,
    # not a flow retrying "Unable to bootstrap" forever
    check_metrics_port(topology, args.metrics_port)  # named before waiting on any DC
    stopped = asyncio.run(_unless_stopped(check_start(topology, selected)))
    if stopped is not None:  # a stop signal before anything started: nothing to finish
        return INTERRUPTED if stopped == signal.SIGINT else 0
    return asyncio.run(
        serve(
            topology,
            flows,
            args.metrics_port,
            args.shutdown_timeout,
            selection={"dc": args.dc, "flow": args.flow},
        )
    )


def _port_error(topology: Topology, metrics_port: int | None, exc: OSError) -> AaError:
    port = topology.metrics.port if metrics_port is None else metrics_port
    where = "--metrics-port" if metrics_port is not None else "metrics.port in the config"
    return AaError(
        f"metrics port {topology.metrics.host}:{port} cannot be used ({exc.strerror or exc}): "
        f"another process holds it; choose another with {where} (0 picks a free one)"
    )


def check_metrics_port(topology: Topology, metrics_port: int | None) -> None:
    """The metrics port can be bound now (as the server binds it: address reuse on), else the
    error naming it and the option to change."""
    port = topology.metrics.port if metrics_port is None else metrics_port
    if port == 0:
        return
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((topology.metrics.host, port))
        except OSError as exc:
            raise _port_error(topology, metrics_port, exc) from None


async def check_start(topology: Topology, selected: Sequence[Flow]) -> None:
    """Every DC of ``selected`` answers (else one error naming each one that does not); an
    include pattern that copies no topic of a flow's source is named in a warning (a typo, or
    a topic not created yet: the flow copies it once it exists)."""
    dcs = sorted({f.source for f in selected} | {f.target for f in selected})
    listing = await list_topics(topology, dcs, hint=START_HINT)
    for fp in build_plan(topology, listing).flows:
        if fp.flow in selected and fp.idle:
            log.warning(
                "topic_pattern_matches_nothing",
                flow=fp.flow.name,
                source=fp.flow.source,
                patterns=list(fp.idle),
                detail=f"no topic in {fp.flow.source} matches yet: a topic created later is "
                "copied; if none will be, fix topics.include (aa plan shows what each flow "
                "copies)",
            )


async def _unless_stopped(check: Coroutine[Any, Any, None]) -> int | None:
    """Run ``check``; the signal that stopped it first (SIGTERM or SIGINT), else None (a
    process stopped while it starts exits like one stopped while it runs, not killed by the
    default handler)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(check)
    stopped: int | None = None

    def stop(sig: int) -> None:
        nonlocal stopped
        stopped = sig
        task.cancel()

    stops = {sig: functools.partial(stop, sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    with loop_signals(loop, stops):
        try:
            await task
        except asyncio.CancelledError:
            if stopped is None:
                raise
    return stopped


async def serve(
    topology: Any,
    flows: list[Any],
    metrics_port: int | None,
    shutdown_timeout: float,
    *,
    selection: dict[str, str | None] | None = None,
) -> int:
    metrics = Metrics()
    supervisor = Supervisor(flows, metrics, shutdown_timeout_s=shutdown_timeout)
    chosen = selection or {"dc": None, "flow": None}
    process = RunningProcess(supervisor, topology, dc=chosen["dc"], flow=chosen["flow"])
    if chosen["dc"] or chosen["flow"]:
        supervisor.on_reload = process.on_signal
    supervisor.extra_tasks += background_tasks(topology, flows, metrics)
    # a lag read ends within interval + slack; two missed in a row make the figure stale
    lag_every = topology.metrics.lag_interval_s
    tracker = CatchUp(stale_after_s=2 * lag_every + LAG_READ_SLACK_S)
    catch_up = catch_up_task(metrics, tracker, heartbeats=holds_heartbeats(topology))
    supervisor.extra_tasks.append(BackgroundTask("catch-up", catch_up))

    def health() -> tuple[bool, dict[str, Any]]:
        ok, detail = supervisor.health()
        return ok, {**detail, "catch_up": tracker.flows}

    port = topology.metrics.port if metrics_port is None else metrics_port
    token = token_from()
    mutual = is_mutual(topology.metrics)
    admin = AdminApi(process, token, mutual_tls=mutual)
    tls = server_context(topology.metrics)
    server = MetricsServer(
        metrics, health, topology.metrics.host, port, routes=admin, ssl_context=tls
    )
    try:
        await server.start()
    except OSError as exc:
        raise _port_error(topology, metrics_port, exc) from None
    log.info(
        "mirror_started",
        flows=[s.name for s, _ in flows],
        metrics=f"{'https' if tls else 'http'}://{server.host}:{server.port}/metrics",
        admin_writes=", ".join(
            [*(["token"] if token is not None else []), *(["mutual TLS"] if mutual else [])]
        )
        or f"refused (no {TOKEN_ENV}, no mutual TLS)",
    )
    try:
        await supervisor.run()
    finally:
        await server.close()
    if supervisor.stopped_by == signal.SIGINT:
        return INTERRUPTED
    failed = [n for n, st in supervisor.states.items() if st.state == "failed"]
    return 1 if failed else 0
