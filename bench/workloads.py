"""The three workloads. Each runs its replicators one after the other on the same brokers,
with topics of their own (so runs never see each other's data), and returns plain dicts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from aa.config import names
from bench.brokers import WanPorts
from bench.configs import DEFAULT_POLICY, IDENTITY, Tuning
from bench.kafka import (
    Expect,
    create_topics,
    delete_topics,
    produce_marks,
    records_in,
    wait_arrival,
)
from bench.measure import Live
from bench.procs import (
    Procs,
    Running,
    Spec,
    consumer_perf,
    parse_consumer_perf,
    parse_producer_perf,
    producer_perf,
    python_cmd,
)
from bench.procstat import MachineTicks, Sampler, cpu_of
from bench.replicators import Deployment, aa_deployment, mm2_deployment, rawcopy_deployment

MB = 1024 * 1024
WARMUP = 100
# The "application" producer of W2/W3: acks=all, no linger, so its own batching adds nothing to
# the latency measured; the preload of W1 is tuned for speed instead.
APP_PROPS = {"acks": "all", "linger.ms": "0"}
PRELOAD_PROPS = {"acks": "1", "linger.ms": "20", "batch.size": str(512 * 1024)}


@dataclass(frozen=True, slots=True)
class Params:
    records: int = 1_000_000
    record_size: int = 512
    partitions: int = 6
    rate: int = 10_000
    duration_s: int = 60
    mesh_rate: int = 5_000
    mesh_duration_s: int = 60
    runners: tuple[str, ...] = ("ceiling", "mm2", "aa")
    aa_loop_prevention: str = "headers"
    aa_profile: bool = False
    latency_warmup_s: float = 5.0
    aa_module: str = "aa.cli.main"
    wan_records: int = 500_000
    wan_delay_ms: float = 25.0
    framed: bool = False
    aa_processes: int = 1
    """W1: `aa run --flow SF->NYC` processes (exactly-once: the flow in as many partition sets)."""
    source_compression: str = "none"
    """The codec the W1/W4 preload writes the source in (what the replicators decompress)."""
    batch_producers: int = 2
    """The ``broker`` runner's ProducerPerformance processes writing at once."""


@dataclass(frozen=True, slots=True)
class Ctx:
    run_dir: Path
    bootstraps: dict[str, str]
    tuning: Tuning
    params: Params
    procs: Procs
    run_id: str
    log: Callable[[str], None]
    wan: dict[str, WanPorts] = field(default_factory=dict)
    """DCs whose broker also listens behind a delaying proxy (W4), by name."""
    broker_pids: dict[str, int] = field(default_factory=dict)
    """The dedicated brokers' pids by DC (none with ``--bootstrap``): their CPU is reported."""
    data_dirs: dict[str, Path] = field(default_factory=dict)
    """The dedicated brokers' log folders by DC: a topic's bytes on disk are reported."""
    schemas: dict[str, Any] | None = None
    """``--framed``: W1's aa flow translates schema ids with this ``schemas`` section."""
    payload_file: Path | None = None
    """``--framed``: W1's preload writes these framed values (:mod:`bench.schemas`)."""

    def topic(self, workload: str, runner: str) -> str:
        return f"bench-{workload}-{runner}-{self.run_id}"

    def preload_props(self) -> dict[str, str]:
        """The W1/W4 preload's producer settings, in the source codec asked for."""
        return {**PRELOAD_PROPS, "compression.type": self.params.source_compression}

    def disk_bytes(self, dc: str, topic: str) -> int | None:
        """The bytes of ``topic``'s log segments in ``dc`` (``None``: brokers not ours)."""
        root = self.data_dirs.get(dc)
        if root is None:
            return None
        return sum(f.stat().st_size for f in root.glob(f"{topic}-*/*.log"))


def _mb(records: int, size: int) -> float:
    return records * size / MB


def _run_tool(ctx: Ctx, spec: Spec, timeout_s: float) -> str:
    code, out = ctx.procs.run(spec, timeout_s=timeout_s)
    if code != 0:
        raise RuntimeError(f"{spec.name} exited with {code}:\n{out[-3000:]}")
    return out


def _deploy(
    ctx: Ctx,
    runner: str,
    workload: str,
    flows: list[str],
    topics: list[str],
    per: list[str],
    *,
    via: dict[str, str] | None = None,
) -> Deployment:
    """``per``: the flow (``SF->NYC``) or DC each process runs; MM2 runs one process per target.
    ``via``: DCs the replicator reaches at another address (W4: the delaying proxy)."""
    run_dir = ctx.run_dir / workload / runner
    dcs = {dc for f in flows for dc in f.split("->")}
    bootstraps = {dc: b for dc, b in {**ctx.bootstraps, **(via or {})}.items() if dc in dcs}
    if runner == "aa":
        flag = "--flow" if "->" in per[0] else "--dc"
        return aa_deployment(
            run_dir, bootstraps, flows, topics, ctx.tuning,
            per_process=[(flag, p) for p in per],
            loop_prevention=ctx.params.aa_loop_prevention, profile=ctx.params.aa_profile,
            module=ctx.params.aa_module, schemas=ctx.schemas if workload == "W1" else None,
        )  # fmt: skip
    if runner == "rawcopy":  # one flow, the topic as it is
        (flow,) = flows
        (topic,) = topics
        src, dst = flow.split("->")
        return rawcopy_deployment(run_dir, bootstraps[src], bootstraps[dst], topic, ctx.tuning)
    targets = [p.split("->")[1] if "->" in p else p for p in per]
    policy = IDENTITY if workload != "W3" else DEFAULT_POLICY
    return mm2_deployment(
        run_dir, bootstraps, flows, topics, ctx.tuning, targets=targets, policy=policy
    )


def _usage(live: Live, finals: list[Any]) -> dict[str, Any]:
    return {
        "processes": len(finals),
        "cpu_total_s": [round(u.cpu_s, 3) for u in finals],
        "peak_rss_mb": [round(u.peak_rss_bytes / MB, 1) for u in finals],
    }


# ---------------------------------------------------------------- W1: catch-up


def w1(ctx: Ctx) -> dict[str, Any]:
    p = ctx.params
    out: dict[str, Any] = {
        "records": p.records, "record_size": p.record_size, "partitions": p.partitions,
    }  # fmt: skip
    src, dst = ctx.bootstraps["SF"], ctx.bootstraps["NYC"]
    for runner in p.runners:
        topic = ctx.topic("w1", runner)
        ctx.log(f"W1 {runner}: preloading {p.records} records into SF/{topic}")
        asyncio.run(create_topics(src, [topic], p.partitions))
        pre = producer_perf(
            ctx.run_dir / "W1" / runner / "preload", src, topic, p.records, p.record_size, -1,
            ctx.preload_props(), payload_file=ctx.payload_file,
        )  # fmt: skip
        preload = parse_producer_perf(_run_tool(ctx, pre, 120 + p.records / 2000))
        if runner == "ceiling":
            out[runner] = _w1_ceiling(ctx, topic)
        elif runner == "broker":
            out[runner] = _w1_broker(ctx, topic)
        else:
            out[runner] = _w1_replicate(ctx, runner, topic)
        out[runner]["preload"] = preload
        ctx.log(f"W1 {runner}: {_w1_line(out[runner])}")
        asyncio.run(delete_topics(src, ctx.topic("w1", runner)))
        asyncio.run(delete_topics(dst, ctx.topic("w1", runner)))
    return out


def _w1_line(r: dict[str, Any]) -> str:
    return f"{r['records_per_s']:.0f} records/s ({r['mb_per_s']:.1f} MB/s)"


def _w1_replicate(
    ctx: Ctx,
    runner: str,
    topic: str,
    *,
    workload: str = "W1",
    records: int | None = None,
    via: dict[str, str] | None = None,
) -> dict[str, Any]:
    p = ctx.params
    n = records or p.records
    # aa's offset syncs of the run: records written to its sync topic (issue 29 item 7)
    syncs = names.for_flow(names.OFFSET_SYNCS_TOPIC, "SF", "NYC")
    syncs_before = asyncio.run(records_in(ctx.bootstraps["NYC"], syncs))
    per = ["SF->NYC"] * (p.aa_processes if runner == "aa" and workload == "W1" else 1)
    if runner == "rawcopy":  # it creates no topics (aa and MM2 create theirs)
        asyncio.run(create_topics(ctx.bootstraps["NYC"], [topic], p.partitions))
    dep = _deploy(ctx, runner, workload, ["SF->NYC"], [topic], per, via=via)
    live = Live(dep, ctx.procs, brokers=ctx.broker_pids).start()
    live.mark("start", live.started)
    try:
        arrival = asyncio.run(
            wait_arrival(
                [Expect(ctx.bootstraps["NYC"], topic, n)],
                timeout_s=120 + n / 2000,
                on_first=lambda: live.mark("first"),
                alive=live.dead,
            )
        )
        live.mark("done", arrival.done_at)
    finally:
        finals = live.stop()
    copy_s = max(arrival.done_at - arrival.first_at, 0.25)
    sync_records = asyncio.run(records_in(ctx.bootstraps["NYC"], syncs)) - syncs_before
    disk = {"source": ctx.disk_bytes("SF", topic), "target": ctx.disk_bytes("NYC", topic)}
    cpu_copy = sum(live.cpu_between("first", "done"))
    cpu_all = sum(u.cpu_s for u in finals)
    return {
        "startup_s": round(arrival.first_at - live.started, 3),
        "copy_s": round(copy_s, 3),
        "wall_s": round(arrival.done_at - live.started, 3),
        "records_per_s": n / copy_s,
        "mb_per_s": _mb(n, p.record_size) / copy_s,
        "cpu_copy_s": round(cpu_copy, 3),
        "cpu_total_s": round(cpu_all, 3),
        "records_per_cpu_s": n / cpu_copy if cpu_copy > 0 else None,
        "cpu_s_per_million": cpu_copy / n * 1e6,
        "peak_rss_mb": round(max(u.peak_rss_bytes for u in finals) / MB, 1),
        **({"sync_records": sync_records} if runner == "aa" else {}),
        "disk_bytes": {
            **disk,
            "target/source": round(disk["target"] / disk["source"], 3)
            if disk["source"] and disk["target"] is not None
            else None,
        },
        **live.machine_between("first", "done"),
        "config": dep.config_name,
        "commands": _commands(dep),
    }


def _commands(dep: Deployment) -> list[str]:
    return [" ".join(spec.argv) for spec in dep.specs]


def _measured(
    ctx: Ctx, spec: Spec, parse: Callable[[str], dict[str, Any]], timeout_s: float
) -> dict[str, Any]:
    """A perf tool's figures, with how busy the machine and the brokers were over its whole
    run (JVM start included: the tool's own rate leaves that out)."""
    m0, b0 = MachineTicks.now(), cpu_of(ctx.broker_pids)
    out = parse(_run_tool(ctx, spec, timeout_s))
    m1, b1 = MachineTicks.now(), cpu_of(ctx.broker_pids)
    out["machine_cpu_pct"] = m1.busy_pct_since(m0)
    out["broker_cpu_s"] = {dc: round(b1[dc] - b0[dc], 3) for dc in b0 if dc in b1}
    return out


def _w1_ceiling(ctx: Ctx, topic: str, attempts: int = 2) -> dict[str, Any]:
    """Read rate of the source (ConsumerPerformance) and write rate of the target
    (ProducerPerformance with the replicators' producer settings), best of ``attempts`` each
    (a ceiling is an upper bound: take the run the shared machine disturbed least); the
    ceiling is the lower of the two rates, since a copy needs both."""
    p = ctx.params
    base = ctx.run_dir / "W1" / "ceiling"
    timeout = 120 + p.records / 2000
    reads, writes = [], []
    for i in range(attempts):
        read_spec = consumer_perf(
            base / f"read-{i}", ctx.bootstraps["SF"], topic, p.records,
            f"bench-ceiling-{ctx.run_id}-{i}", ctx.tuning.consumer_props(),
        )  # fmt: skip
        reads.append(_measured(ctx, read_spec, parse_consumer_perf, timeout))
        target = f"{ctx.topic('w1', 'ceiling')}-{i}"  # on NYC, created empty
        asyncio.run(create_topics(ctx.bootstraps["NYC"], [target], p.partitions))
        write_spec = producer_perf(
            base / f"write-{i}", ctx.bootstraps["NYC"], target, p.records, p.record_size, -1,
            ctx.tuning.producer_props(),
        )  # fmt: skip
        writes.append(_measured(ctx, write_spec, parse_producer_perf, timeout))
        asyncio.run(delete_topics(ctx.bootstraps["NYC"], target))
    read = max(reads, key=lambda r: r["fetch_records_per_s"])
    write = max(writes, key=lambda r: r["records_per_s"])
    rate = min(read["fetch_records_per_s"], write["records_per_s"])
    return {
        "read": read,
        "write": write,
        "attempts": {"read": reads, "write": writes},
        "records_per_s": rate,
        "mb_per_s": _mb(int(rate), p.record_size),
    }


def _w1_broker(ctx: Ctx, topic: str) -> dict[str, Any]:
    """The target broker's write limit as a batch copier meets it: ``batch_producers``
    ProducerPerformance processes at once, each writing its share of the records in large
    batches with a long linger (1 MiB, 50 ms: full batches, as a copier of whole fetched
    batches sends them) in the replicators' codec and acks, into one NYC topic; the rate is
    the records over the wall time from the first to the last producer's end (their JVM start
    left out: each reports its own elapsed time), read rate as ConsumerPerformance's. Unlike
    ``ceiling``, one Java producer's per-record cost is not what limits it."""
    p = ctx.params
    base = ctx.run_dir / "W1" / "broker"
    timeout = 120 + p.records / 2000
    read_spec = consumer_perf(
        base / "read", ctx.bootstraps["SF"], topic, p.records, f"bench-broker-{ctx.run_id}",
        ctx.tuning.consumer_props(),
    )  # fmt: skip
    read = _measured(ctx, read_spec, parse_consumer_perf, timeout)
    target = f"{ctx.topic('w1', 'broker')}-write"
    asyncio.run(create_topics(ctx.bootstraps["NYC"], [target], p.partitions))
    props = {**ctx.tuning.producer_props(), "batch.size": str(MB), "linger.ms": "50"}
    share = p.records // p.batch_producers
    m0, b0 = MachineTicks.now(), cpu_of(ctx.broker_pids)
    specs = [
        producer_perf(
            base / f"write-{i}", ctx.bootstraps["NYC"], target, share, p.record_size, -1, props
        )
        for i in range(p.batch_producers)
    ]
    running = [ctx.procs.start(spec) for spec in specs]
    writes = []
    for r in running:
        code = r.proc.wait(timeout=timeout)
        if code != 0:
            raise RuntimeError(f"producer-perf exited with {code}:\n{r.output()[-3000:]}")
        writes.append(parse_producer_perf(r.output()))
    m1, b1 = MachineTicks.now(), cpu_of(ctx.broker_pids)
    asyncio.run(delete_topics(ctx.bootstraps["NYC"], target))
    # each producer's own elapsed time is its records over its rate; together they wrote
    # every record in the longest of those times (they ran at once)
    longest = max(w["records"] / w["records_per_s"] for w in writes)
    write_rate = sum(w["records"] for w in writes) / longest
    rate = min(read["fetch_records_per_s"], write_rate)
    return {
        "read": read,
        "write": {
            "producers": writes,
            "records_per_s": write_rate,
            "props": props,
            "machine_cpu_pct": m1.busy_pct_since(m0),
            "broker_cpu_s": {dc: round(b1[dc] - b0[dc], 3) for dc in b0 if dc in b1},
        },
        "records_per_s": rate,
        "mb_per_s": _mb(int(rate), p.record_size),
    }


# ---------------------------------------------------------------- W2: steady latency


def _probe(ctx: Ctx, runner: str, bootstrap: str, topic: str, count: int) -> tuple[Any, Path]:
    base = ctx.run_dir / "W2" / runner / "probe"
    base.mkdir(parents=True, exist_ok=True)
    ready, result = base / "ready", base / "latency.json"
    args = ["--bootstrap", bootstrap, "--topic", topic, "--count", str(count),
            "--timeout", str(ctx.params.duration_s + 120), "--ready", str(ready),
            "--out", str(result), "--skip-s", str(ctx.params.latency_warmup_s)]  # fmt: skip
    running = ctx.procs.start(Spec(f"latency {topic}", python_cmd("bench.latency", args), base))
    return _when_ready(running, ready, "the latency probe"), result


def _when_ready(running: Running, ready: Path, what: str) -> Running:
    """``running`` once it has touched ``ready`` (a helper process that reports readiness)."""
    deadline = time.monotonic() + 60
    while not ready.exists():
        if running.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not get ready:\n{running.output()[-2000:]}")
        time.sleep(0.1)
    return running


def w2(ctx: Ctx) -> dict[str, Any]:
    p = ctx.params
    n = p.rate * p.duration_s
    out: dict[str, Any] = {"rate": p.rate, "duration_s": p.duration_s, "records": n}
    src, dst = ctx.bootstraps["SF"], ctx.bootstraps["NYC"]
    for runner in [r for r in p.runners if r not in ("broker", "rawcopy")]:
        topic = ctx.topic("w2", runner)
        asyncio.run(create_topics(src, [topic], p.partitions))
        live: Live | None = None
        row: dict[str, Any] = {}
        try:
            if runner == "ceiling":  # produce -> consume on the source, no replicator
                probe_at = src
            else:
                dep = _deploy(ctx, runner, "W2", ["SF->NYC"], [topic], ["SF->NYC"])
                live = Live(dep, ctx.procs).start()
                asyncio.run(produce_marks(src, topic, WARMUP))
                asyncio.run(
                    wait_arrival([Expect(dst, topic, WARMUP)], timeout_s=180, alive=live.dead)
                )
                live.mark("ready")
                probe_at = dst
            probe, result = _probe(ctx, runner, probe_at, topic, n)
            load = producer_perf(
                ctx.run_dir / "W2" / runner / "load", src, topic, n, p.record_size, p.rate,
                APP_PROPS,
            )  # fmt: skip
            produced = parse_producer_perf(_run_tool(ctx, load, p.duration_s * 3 + 120))
            probe.proc.wait(p.duration_s + 180)
            latency = orjson.loads(result.read_bytes())
            row.update(latency=latency, produced=produced)
            if live is not None:
                expects = [Expect(dst, topic, WARMUP + n)]
                asyncio.run(wait_arrival(expects, timeout_s=180, alive=live.dead))
                live.mark("done")
                cpu = sum(live.cpu_between("ready", "done"))
                row["cpu_s"] = round(cpu, 3)
                row["cpu_s_per_million"] = cpu / n * 1e6
        finally:
            if live is not None:
                row["peak_rss_mb"] = round(max(u.peak_rss_bytes for u in live.stop()) / MB, 1)
                row["config"] = live.deployment.config_name
                row["commands"] = _commands(live.deployment)
        out[runner] = row
        ctx.log(f"W2 {runner}: p50 {latency.get('p50_ms')} ms, p99 {latency.get('p99_ms')} ms")
        for bootstrap in (src, dst):
            asyncio.run(delete_topics(bootstrap, topic))
    return out


# ---------------------------------------------------------------- W3: full mesh


MESH = ("SF", "NYC", "LON")


def w3(ctx: Ctx) -> dict[str, Any]:
    p = ctx.params
    n = p.mesh_rate * p.mesh_duration_s
    flows = [f"{a}->{b}" for a in MESH for b in MESH if a != b]
    out: dict[str, Any] = {"rate_per_dc": p.mesh_rate, "duration_s": p.mesh_duration_s,
                           "records_per_dc": n, "flows": flows}  # fmt: skip
    for runner in [r for r in p.runners if r in ("aa", "mm2")]:
        topic = ctx.topic("w3", runner)
        for dc in MESH:
            asyncio.run(create_topics(ctx.bootstraps[dc], [topic], p.partitions))
        dep = _deploy(ctx, runner, "W3", flows, [topic], list(MESH))

        def expects(per_origin: int, topic: str = topic, runner: str = runner) -> list[Expect]:
            if runner == "aa" and ctx.params.aa_loop_prevention == "headers":
                return [Expect(ctx.bootstraps[dc], topic, 3 * per_origin) for dc in MESH]
            return [  # MM2 (and aa prefix mode): SF.topic in NYC and LON, and so on
                Expect(ctx.bootstraps[dc], f"{o}.{topic}", per_origin)
                for dc in MESH
                for o in MESH
                if o != dc
            ]

        live = Live(dep, ctx.procs).start()
        try:
            for dc in MESH:
                asyncio.run(produce_marks(ctx.bootstraps[dc], topic, WARMUP))
            asyncio.run(wait_arrival(expects(WARMUP), timeout_s=240, alive=live.dead))
            live.mark("ready")
            loads = [
                ctx.procs.start(
                    producer_perf(
                        ctx.run_dir / "W3" / runner / f"load-{dc}", ctx.bootstraps[dc], topic,
                        n, p.record_size, p.mesh_rate, APP_PROPS,
                    )
                )
                for dc in MESH
            ]  # fmt: skip
            for load in loads:
                load.proc.wait(p.mesh_duration_s * 3 + 120)
            produced = [parse_producer_perf(load.output()) for load in loads]
            arrival = asyncio.run(wait_arrival(expects(WARMUP + n), timeout_s=300, alive=live.dead))
            live.mark("done", arrival.done_at)
        finally:
            finals = live.stop()
        cpu = live.cpu_between("ready", "done")
        per_process = 2 * n  # each process writes what its two inbound flows copy
        out[runner] = {
            "processes": [s.name for s in dep.specs],
            "cpu_s": cpu,
            "cpu_s_per_million": [round(c / per_process * 1e6, 2) for c in cpu],
            "peak_rss_mb": [round(u.peak_rss_bytes / MB, 1) for u in finals],
            "drain_s": round(arrival.done_at - live.marks["ready"][0], 3),
            "produced": produced,
            "config": dep.config_name,
            "commands": _commands(dep),
        }
        ctx.log(f"W3 {runner}: cpu/M {out[runner]['cpu_s_per_million']}, "
                f"RSS MB {out[runner]['peak_rss_mb']}")  # fmt: skip
        for dc in MESH:
            asyncio.run(delete_topics(ctx.bootstraps[dc], topic))
    return out


# ---------------------------------------------------------------- W4: across a WAN


def _wan_proxy(ctx: Ctx, dc: str) -> Running:
    """Start ``bench.wan`` in front of ``dc``'s WAN listener; return once it listens."""
    ports = ctx.wan[dc]
    base = ctx.run_dir / "W4" / f"wan-{dc}"
    base.mkdir(parents=True, exist_ok=True)
    ready = base / "ready"
    route = f"{ports.proxy.rpartition(':')[2]}={ports.listener}"
    args = ["--route", route, "--delay-ms", str(ctx.params.wan_delay_ms), "--ready", str(ready)]
    running = ctx.procs.start(Spec(f"wan proxy {dc}", python_cmd("bench.wan", args), base))
    return _when_ready(running, ready, "the WAN proxy")


def w4(ctx: Ctx) -> dict[str, Any]:
    """W1's catch-up with the source behind a delaying proxy: the replicator reaches SF only
    across the emulated WAN (fetches, commits, metadata, offset syncs), NYC locally."""
    p = ctx.params
    if "SF" not in ctx.wan:
        raise RuntimeError("W4 needs SF started with a WAN listener (bench.run does that)")
    n = p.wan_records
    out: dict[str, Any] = {
        "records": n, "record_size": p.record_size, "partitions": p.partitions,
        "delay_ms_each_way": p.wan_delay_ms, "rtt_ms": 2 * p.wan_delay_ms,
    }  # fmt: skip
    src, dst = ctx.bootstraps["SF"], ctx.bootstraps["NYC"]
    proxy = _wan_proxy(ctx, "SF")
    sampler = Sampler(proxy.pid)
    try:
        for runner in [r for r in p.runners if r in ("aa", "mm2")]:
            topic = ctx.topic("w4", runner)
            ctx.log(f"W4 {runner}: preloading {n} records into SF/{topic}")
            asyncio.run(create_topics(src, [topic], p.partitions))
            pre = producer_perf(
                ctx.run_dir / "W4" / runner / "preload", src, topic, n, p.record_size, -1,
                ctx.preload_props(),
            )  # fmt: skip
            _run_tool(ctx, pre, 120 + n / 2000)
            proxy_before = sampler.now().cpu_s
            out[runner] = _w1_replicate(
                ctx, runner, topic, workload="W4", records=n, via={"SF": ctx.wan["SF"].proxy}
            )
            out[runner]["proxy_cpu_s"] = round(sampler.now().cpu_s - proxy_before, 3)
            ctx.log(f"W4 {runner}: {_w1_line(out[runner])}")
            asyncio.run(delete_topics(src, topic))
            asyncio.run(delete_topics(dst, topic))
    finally:
        sampler.stop()
        ctx.procs.stop(proxy)
    return out


WORKLOADS: dict[str, Callable[[Ctx], dict[str, Any]]] = {"W1": w1, "W2": w2, "W3": w3, "W4": w4}
