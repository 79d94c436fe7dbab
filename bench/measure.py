"""Run a replicator deployment and measure its process trees while it works."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from bench.procs import Procs, Running
from bench.procstat import MachineTicks, Sampler, Usage, cpu_of
from bench.replicators import Deployment


@dataclass(slots=True)
class Live:
    """A started deployment: its processes, one sampler each, and named CPU marks."""

    deployment: Deployment
    procs: Procs
    running: list[Running] = field(default_factory=list)
    samplers: list[Sampler] = field(default_factory=list)
    marks: dict[str, tuple[float, list[Usage]]] = field(default_factory=dict)
    started: float = 0.0
    brokers: dict[str, int] = field(default_factory=dict)
    """The brokers' pids by DC (dedicated brokers only): their CPU is taken at each mark."""
    machine: dict[str, tuple[MachineTicks, dict[str, float]]] = field(default_factory=dict)
    """At each mark: the machine's CPU ticks and each broker's CPU seconds."""

    def start(self) -> Live:
        self.started = time.monotonic()
        for spec in self.deployment.specs:
            run = self.procs.start(spec)
            self.running.append(run)
            self.samplers.append(Sampler(run.pid))
        return self

    def mark(self, name: str, at: float | None = None) -> None:
        """Record every process's CPU now, under ``name`` (e.g. 'first', 'ready', 'done')."""
        self.marks[name] = (at or time.monotonic(), [s.now() for s in self.samplers])
        self.machine[name] = (MachineTicks.now(), cpu_of(self.brokers))

    def dead(self) -> str | None:
        """The name and output tail of a process that exited, if any."""
        for run in self.running:
            if run.proc.poll() is not None:
                tail = "\n".join(run.output().splitlines()[-30:])
                return f"{run.spec.name} exited with {run.proc.returncode}:\n{tail}"
        return None

    def stop(self) -> list[Usage]:
        """Stop every process (SIGTERM, grace, SIGKILL) and return the final usage of each."""
        finals = [s.now() for s in self.samplers]
        for run in self.running:
            self.procs.stop(run)
        for s in self.samplers:
            s.stop()
        return finals

    def cpu_between(self, a: str, b: str) -> list[float]:
        return [
            round(y.cpu_s - x.cpu_s, 3)
            for x, y in zip(self.marks[a][1], self.marks[b][1], strict=True)
        ]

    def machine_between(self, a: str, b: str) -> dict[str, Any]:
        """How busy the machine (all cores) and each broker were between two marks: shows
        whether a copy was short of CPU while the ceiling's tools each had the machine alone."""
        (m0, b0), (m1, b1) = self.machine[a], self.machine[b]
        return {
            "machine_cpu_pct": m1.busy_pct_since(m0),
            "broker_cpu_s": {dc: round(b1[dc] - b0[dc], 3) for dc in b0 if dc in b1},
        }

    def seconds_between(self, a: str, b: str) -> float:
        return self.marks[b][0] - self.marks[a][0]
