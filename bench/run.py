"""``python -m bench.run``: aa, MirrorMaker 2 and the perf-tool ceiling, side by side.

Starts its own brokers (one per DC, fresh, on free ports) unless ``--bootstrap`` names running
ones, runs the chosen workloads through each runner in turn, prints one table and writes
``bench/results/<timestamp>.json`` with the machine's details and both replicators' configs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.brokers import Brokers, dedicated, parse_bootstrap
from bench.configs import Tuning, tuning_dict
from bench.procs import JVM_PERF_OPTS, MM2_HEAP, Procs
from bench.report import machine, ratios, table, write_json
from bench.schemas import framed
from bench.workloads import WORKLOADS, Ctx, Params

RESULTS = Path(__file__).parent / "results"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    p.add_argument("--only", default="W1,W2,W3", help="workloads, e.g. W1 or W1,W2")
    p.add_argument(
        "--runners",
        default="ceiling,mm2,aa",
        help="subset of ceiling,broker,rawcopy,mm2,aa (broker: the target's write limit with "
        "large batches from several producers at once, W1; rawcopy: W1's topic copied by "
        "bench.rawcopy, fetched batches written unchanged)",
    )
    p.add_argument("--records", type=int, default=1_000_000, help="W1 records")
    p.add_argument("--record-size", type=int, default=512)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--rate", type=int, default=10_000, help="W2 records/s")
    p.add_argument("--duration", type=int, default=60, help="W2 seconds")
    p.add_argument(
        "--latency-warmup",
        type=float,
        default=5.0,
        help="W2: leave the first seconds of records out of the latency figures",
    )
    p.add_argument("--mesh-rate", type=int, default=5_000, help="W3 records/s per DC")
    p.add_argument("--mesh-duration", type=int, default=60, help="W3 seconds")
    p.add_argument("--wan-records", type=int, default=500_000, help="W4 records")
    p.add_argument("--wan-delay-ms", type=float, default=25.0, help="W4 delay each way")
    p.add_argument("--mm2-tasks", type=int, default=1, help="MM2 tasks.max (its default: 1)")
    p.add_argument("--batch-size", type=int, default=Tuning().batch_size)
    p.add_argument("--linger-ms", type=int, default=Tuning().linger_ms)
    p.add_argument("--compression", default="none", help="both replicators' target codec")
    p.add_argument(
        "--source-compression",
        help="the codec W1/W4 preload their source in (default: --compression)",
    )
    p.add_argument("--delivery", default="at-least-once", choices=["at-least-once", "exactly-once"])
    p.add_argument(
        "--aa-processes",
        type=int,
        default=1,
        help="W1: aa processes running the flow (exactly-once: split in that many partition "
        "sets, exactly_once.partition_sets)",
    )
    p.add_argument("--batch-producers", type=int, default=2, help="the broker runner's producers")
    p.add_argument(
        "--aa-memory-budget-mb",
        type=int,
        help="aa's tuning.memory_budget_mb per flow (default: aa's own, 32)",
    )
    p.add_argument(
        "--aa-max-bytes-per-s",
        type=float,
        help="aa's tuning.max_bytes_per_s, each flow's rate limit in bytes/s (default: none)",
    )
    p.add_argument("--aa-loop-prevention", default="headers", choices=["headers", "prefix"])
    p.add_argument(
        "--framed",
        action="store_true",
        help="W1: values framed for a schema registry (magic byte, schema id) and aa's flow "
        "translating the ids; starts a registry per DC (`aa dev fetch --registry`)",
    )
    p.add_argument(
        "--aa-profile",
        action="store_true",
        help="run aa under pyinstrument (figures then not comparable): a profile.pyisession per "
        "process in the work folder, read with `pyinstrument --load FILE --show '*aiokafka*'`",
    )
    p.add_argument(
        "--bootstrap",
        help="use running clusters instead of starting dedicated ones: SF=h:p,NYC=h:p,LON=h:p",
    )
    p.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON result")
    p.add_argument("--work", type=Path, help="keep configs and process logs in this folder")
    return p


@contextlib.contextmanager
def _work_dir(given: Path | None) -> Iterator[Path]:
    if given:
        given.mkdir(parents=True, exist_ok=True)
        yield given
    else:
        with tempfile.TemporaryDirectory(prefix="aa-bench-work-") as tmp:
            yield Path(tmp)


def _configs(work: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for f in sorted([*work.glob("W*/*/aa-topology.yaml"), *work.glob("W*/*/mm2.properties")]):
        out.setdefault(f.parent.parent.name, {})[f.parent.name] = f.read_text()
    return out


def main(argv: list[str] | None = None) -> Path:
    args = parser().parse_args(argv)
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in only if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"--only: unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    runners = tuple(r.strip() for r in args.runners.split(",") if r.strip())
    params = Params(
        records=args.records, record_size=args.record_size, partitions=args.partitions,
        rate=args.rate, duration_s=args.duration, mesh_rate=args.mesh_rate,
        mesh_duration_s=args.mesh_duration, runners=runners,
        aa_loop_prevention=args.aa_loop_prevention, aa_profile=args.aa_profile,
        latency_warmup_s=args.latency_warmup, wan_records=args.wan_records,
        wan_delay_ms=args.wan_delay_ms, framed=args.framed, aa_processes=args.aa_processes,
        source_compression=args.source_compression or args.compression,
        batch_producers=args.batch_producers,
    )  # fmt: skip
    tuning = Tuning(
        batch_size=args.batch_size, linger_ms=args.linger_ms, compression=args.compression,
        mm2_tasks=args.mm2_tasks, aa_memory_budget_mb=args.aa_memory_budget_mb,
        aa_max_bytes_per_s=args.aa_max_bytes_per_s, delivery=args.delivery,
        aa_partition_sets=args.aa_processes if args.delivery == "exactly-once" else 1,
    )  # fmt: skip
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # retries on fresh topics are noise
    started = datetime.now(UTC)
    dcs = ["SF", "NYC", "LON"] if "W3" in only else ["SF", "NYC"]
    doc: dict[str, Any] = {
        "started_at": started.isoformat(),
        "command": " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
        "params": asdict(params),
        "tuning": tuning_dict(tuning),
        "jvm": {"mm2": [*MM2_HEAP, *JVM_PERF_OPTS]},
        "brokers": "given" if args.bootstrap else "dedicated (fresh, one per DC, 512 MB heap)",
        "machine": machine(),
        "workloads": {},
    }

    def log(msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    if args.bootstrap and "W4" in only:
        raise SystemExit(
            "--only W4 needs dedicated brokers (the source gets a second listener for the "
            "delaying proxy): drop --bootstrap"
        )
    brokers = (
        contextlib.nullcontext(Brokers(parse_bootstrap(args.bootstrap)))
        if args.bootstrap
        else dedicated(dcs, wan=["SF"] if "W4" in only else ())
    )
    with (
        _work_dir(args.work) as work,
        brokers as found,
        Procs() as procs,
        contextlib.ExitStack() as stack,
    ):
        bootstraps = found.bootstraps
        missing = [dc for dc in dcs if dc not in bootstraps]
        if missing:
            raise SystemExit(f"--bootstrap lacks {missing}")
        log(f"brokers: {bootstraps}; work folder {work}")
        ctx = Ctx(
            work, dict(bootstraps), tuning, params, procs, uuid.uuid4().hex[:6], log,
            wan=dict(found.wan), broker_pids=dict(found.pids), data_dirs=dict(found.data_dirs),
        )  # fmt: skip
        if args.framed:
            schemas, payloads = stack.enter_context(framed(work, args.record_size))
            ctx = replace(ctx, schemas=schemas, payload_file=payloads)
            log(f"framed values: registries {schemas}")
        try:
            for name in only:
                log(f"{name} starting")
                load_start = [round(x, 2) for x in os.getloadavg()]
                doc["workloads"][name] = WORKLOADS[name](ctx)
                # The machine may be shared: say how busy it was while this workload ran.
                doc["workloads"][name]["load_avg"] = {
                    "start": load_start,
                    "end": [round(x, 2) for x in os.getloadavg()],
                }
        finally:
            doc["configs"] = _configs(work)
    ratios(doc["workloads"])
    doc["machine"]["load_avg_end"] = list(os.getloadavg())
    doc["finished_at"] = datetime.now(UTC).isoformat()
    path: Path = args.out / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    write_json(path, doc)
    print(table(doc["workloads"]))
    print(f"\nresult: {path}")
    return path


if __name__ == "__main__":
    main()
