"""CPU seconds and resident memory of a process tree, read from ``/proc``.

CPU is utime+stime of every live process in the tree plus cutime+cstime of the root (children
it has already reaped); memory is the summed VmRSS, sampled, and the summed VmHWM (the kernel's
own peak), so a short spike between samples is not missed for a single-process replicator.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces: split after its closing parenthesis.
    return raw[raw.rindex(")") + 2 :].split()


def tree(root: int) -> list[int]:
    """``root`` and all its live descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat(int(entry))
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_seconds(root: int) -> float:
    total = 0.0
    for pid in tree(root):
        fields = _stat(pid)
        if fields is None:
            continue
        # Fields after the name, 0-based: 11 utime, 12 stime, 13 cutime, 14 cstime.
        ticks = int(fields[11]) + int(fields[12])
        if pid == root:
            ticks += int(fields[13]) + int(fields[14])
        total += ticks / CLK_TCK
    return total


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_bytes(root: int) -> int:
    return sum(_status_kb(p, "VmRSS") for p in tree(root)) * 1024


def hwm_bytes(root: int) -> int:
    return sum(_status_kb(p, "VmHWM") for p in tree(root)) * 1024


@dataclass(frozen=True, slots=True)
class MachineTicks:
    """The machine's CPU time so far, all cores (the first line of ``/proc/stat``)."""

    busy: int
    total: int

    @classmethod
    def now(cls) -> MachineTicks:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        idle = ticks[3] + ticks[4]  # idle and iowait
        return cls(sum(ticks) - idle, sum(ticks))

    def busy_pct_since(self, earlier: MachineTicks) -> float | None:
        """How busy the whole machine was since ``earlier``: 100 = every core all the time."""
        total = self.total - earlier.total
        return round(100 * (self.busy - earlier.busy) / total, 1) if total > 0 else None


def cpu_of(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process (brokers), without their children."""
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_s: float
    peak_rss_bytes: int


class Sampler:
    """Samples a process tree in a background thread until :meth:`stop`."""

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        self.pid = pid
        self._interval = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._cpu = 0.0
        self._peak = 0
        self._thread = threading.Thread(target=self._loop, name=f"sampler-{pid}", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        cpu = cpu_seconds(self.pid)
        rss = max(rss_bytes(self.pid), hwm_bytes(self.pid))
        with self._lock:
            self._cpu = max(self._cpu, cpu)  # a finished tree reads as 0: keep the last value
            self._peak = max(self._peak, rss)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def now(self) -> Usage:
        """Sample right now (for marks such as 'first record arrived') and return the totals."""
        self._sample()
        with self._lock:
            return Usage(self._cpu, self._peak)

    def stop(self) -> Usage:
        usage = self.now()
        self._stop.set()
        self._thread.join()
        return usage
