"""The two replicators as process specs built from one tuning: aa (``aa run``) and MirrorMaker
2 in dedicated mode. Each deployment is a set of processes plus the config files they read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.configs import IDENTITY, Tuning, aa_topology, mm2_properties
from bench.procs import MM2_HEAP, Spec, java_cmd, python_cmd


@dataclass(frozen=True, slots=True)
class Deployment:
    """What one replicator runs for one workload: its processes and its config text."""

    runner: str
    specs: tuple[Spec, ...]
    config_name: str
    config_text: str


def aa_deployment(
    run_dir: Path,
    bootstraps: Mapping[str, str],
    flows: Sequence[str],
    topics: Sequence[str],
    tuning: Tuning,
    *,
    per_process: Sequence[tuple[str, str]],
    loop_prevention: str = "headers",
    profile: bool = False,
    module: str = "aa.cli.main",
    schemas: Mapping[str, Any] | None = None,
) -> Deployment:
    """``per_process``: one ``("--flow", "SF->NYC")`` or ``("--dc", "NYC")`` per process;
    ``profile`` runs each under pyinstrument (``profile.pyisession`` in its log folder)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    text = aa_topology(
        bootstraps, flows, topics, tuning, loop_prevention=loop_prevention, schemas=schemas
    )
    path = run_dir / "aa-topology.yaml"
    path.write_text(text)
    specs = []
    for i, (flag, value) in enumerate(per_process):
        twin = per_process.index((flag, value)) != i  # more than one process of a flow or DC
        log_dir = run_dir / f"aa-{value.replace('->', '-')}{f'-{i}' if twin else ''}"
        args = ["--log-format", "json", "run", "--config", str(path), flag, value]
        if profile:
            report = str(log_dir / "profile.pyisession")
            argv = python_cmd("pyinstrument", ["-r", "pyisession", "-o", report, "-m", module])
            argv = (*argv, *args)
        else:
            argv = python_cmd(module, args)
        specs.append(Spec(f"aa {flag} {value}{f' #{i}' if twin else ''}", argv, log_dir))
    return Deployment("aa", tuple(specs), path.name, text)


def mm2_deployment(
    run_dir: Path,
    bootstraps: Mapping[str, str],
    flows: Sequence[str],
    topics: Sequence[str],
    tuning: Tuning,
    *,
    targets: Sequence[str],
    policy: str = IDENTITY,
) -> Deployment:
    """One dedicated-mode MM2 process per target DC (``--clusters X``), all reading one file."""
    run_dir.mkdir(parents=True, exist_ok=True)
    text = mm2_properties(bootstraps, flows, topics, tuning, policy=policy)
    path = run_dir / "mm2.properties"
    path.write_text(text)
    specs = []
    for target in targets:
        log_dir = run_dir / f"mm2-{target}"
        argv = java_cmd(
            "org.apache.kafka.connect.mirror.MirrorMaker",
            [str(path), "--clusters", target],
            heap=MM2_HEAP,
            log_dir=log_dir,
        )
        specs.append(Spec(f"mm2 --clusters {target}", argv, log_dir))
    return Deployment("mm2", tuple(specs), path.name, text)


def rawcopy_deployment(
    run_dir: Path, source: str, target: str, topic: str, tuning: Tuning
) -> Deployment:
    """``python -m bench.rawcopy``: ``topic`` copied whole batch by whole batch (the target
    topic must exist), with the replicators' consumer fetch sizes; its config is its command."""
    run_dir.mkdir(parents=True, exist_ok=True)
    c = tuning.consumer_props()
    args = [
        "--source", source, "--target", target, "--topic", topic,
        "--max-poll-records", c["max.poll.records"], "--fetch-max-bytes", c["fetch.max.bytes"],
        "--max-partition-fetch-bytes", c["max.partition.fetch.bytes"],
    ]  # fmt: skip
    argv = python_cmd("bench.rawcopy", args)
    spec = Spec("rawcopy", argv, run_dir / "rawcopy")
    return Deployment("rawcopy", (spec,), "command line", " ".join(argv))
