"""Machine details, the printed table, ratios and the JSON file of a run."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from aa.dev.artifacts import java_executable, kafka_version


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    java = subprocess.run([java_executable(), "-version"], capture_output=True, text=True)
    java_version = (java.stderr or java.stdout).splitlines()[0] if java.returncode == 0 else "?"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "java": java_version,
        "kafka": kafka_version(),
        "aiokafka": metadata.version("aiokafka"),
        "aa_commit": commit,
        "load_avg_start": list(os.getloadavg()),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def ratios(workloads: dict[str, Any]) -> None:
    """Add ``ratios`` (aa/mm2, aa/ceiling) to each workload result, in place."""
    if (w1 := workloads.get("W1")) and "aa" in w1:
        aa, mm2, ceil = w1["aa"], w1.get("mm2", {}), w1.get("ceiling", {})
        broker, raw = w1.get("broker", {}), w1.get("rawcopy", {})
        w1["ratios"] = {
            "aa/mm2 records_per_s": _ratio(aa["records_per_s"], mm2.get("records_per_s")),
            "aa/mm2 records_per_cpu_s": _ratio(
                aa["records_per_cpu_s"], mm2.get("records_per_cpu_s")
            ),
            "aa/ceiling records_per_s": _ratio(aa["records_per_s"], ceil.get("records_per_s")),
            "aa/broker records_per_s": _ratio(aa["records_per_s"], broker.get("records_per_s")),
            "aa/rawcopy records_per_s": _ratio(aa["records_per_s"], raw.get("records_per_s")),
            "aa/rawcopy records_per_cpu_s": _ratio(
                aa["records_per_cpu_s"], raw.get("records_per_cpu_s")
            ),
        }
    if (w2 := workloads.get("W2")) and "aa" in w2:
        lat = {r: w2[r]["latency"] for r in ("aa", "mm2", "ceiling") if r in w2}
        w2["ratios"] = {
            f"aa/{other} {k}": _ratio(lat["aa"].get(k), lat[other].get(k))
            for other in ("mm2", "ceiling")
            if other in lat
            for k in ("p50_ms", "p99_ms", "max_ms")
        }
    if (w3 := workloads.get("W3")) and "aa" in w3 and "mm2" in w3:
        aa, mm2 = w3["aa"], w3["mm2"]
        w3["ratios"] = {
            "aa/mm2 cpu_s_per_million": _ratio(
                sum(aa["cpu_s_per_million"]), sum(mm2["cpu_s_per_million"])
            ),
            "aa/mm2 peak_rss_mb": _ratio(max(aa["peak_rss_mb"]), max(mm2["peak_rss_mb"])),
        }

    if (w4 := workloads.get("W4")) and "aa" in w4 and "mm2" in w4:
        aa, mm2 = w4["aa"], w4["mm2"]
        w4["ratios"] = {
            "aa/mm2 records_per_s": _ratio(aa["records_per_s"], mm2["records_per_s"]),
            "aa/mm2 records_per_cpu_s": _ratio(
                aa["records_per_cpu_s"], mm2.get("records_per_cpu_s")
            ),
        }


def _f(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return "/".join(_f(x, digits) for x in v)
    return f"{v:,.{digits}f}" if isinstance(v, float | int) else str(v)


_COPY = ("records/s", "MB/s", "copy s", "startup s", "CPU s (copy)", "records/CPU-s", "peak RSS MB")
_COPY += ("machine CPU % (copy)",)
"""The columns of a copy run (W1, W4). Machine CPU: all cores, 100 = every core busy."""


def _copy_cells(x: dict[str, Any]) -> list[str]:
    digits = (0, 1, 1, 1, 1, 0, 0, 0)
    keys = ("records_per_s", "mb_per_s", "copy_s", "startup_s", "cpu_copy_s")
    keys += ("records_per_cpu_s", "peak_rss_mb", "machine_cpu_pct")
    return [_f(x.get(k), d) for k, d in zip(keys, digits, strict=True)]


def _latency_cells(x: dict[str, Any]) -> list[str]:
    lat = x["latency"]
    cells = [_f(lat.get(k)) for k in ("p50_ms", "p99_ms", "p999_ms", "max_ms")]
    return [*cells, _f(x.get("cpu_s_per_million"), 1), _f(x.get("peak_rss_mb"))]


def _mesh_cells(x: dict[str, Any]) -> list[str]:
    cpu, rss = _f(x["cpu_s_per_million"], 1), _f(x["peak_rss_mb"])
    return [str(len(x["processes"])), cpu, rss, _f(x["drain_s"], 1)]


def _runs(
    w: dict[str, Any],
    runners: tuple[str, ...],
    columns: tuple[str, ...],
    cells: Callable[[dict[str, Any]], list[str]],
    *,
    left: int = 0,
) -> list[str]:
    """One workload's Markdown table: a row per runner present, ``cells`` giving its columns
    (the first ``left`` of them left-aligned, the rest right-aligned)."""
    align = "|---|" + "---|" * left + "---:|" * (len(columns) - left)
    out = ["", "| runner | " + " | ".join(columns) + " |", align]
    return out + [f"| {r} | " + " | ".join(cells(w[r])) + " |" for r in runners if r in w]


def _pcts(ceiling: dict[str, Any], kind: str) -> str:
    return "/".join(_f(a.get("machine_cpu_pct")) for a in ceiling.get("attempts", {}).get(kind, []))


def _disk_lines(w: dict[str, Any]) -> list[str]:
    """Each replicator's target bytes on disk against its source's (log segments)."""
    out = []
    for r in ("aa", "mm2", "rawcopy"):
        disk = w.get(r, {}).get("disk_bytes") or {}
        if disk.get("target/source") is not None:
            out.append(
                f"{r}: target {disk['target'] / 2**20:,.1f} MiB on disk, source "
                f"{disk['source'] / 2**20:,.1f} MiB: {disk['target/source']:.3f}x"
            )
    return ["", *out] if out else []


def _broker_cpu_lines(w: dict[str, Any]) -> list[str]:
    """The target broker's CPU seconds over each copy (dedicated brokers only)."""
    cells = []
    for r in ("aa", "mm2", "rawcopy"):
        cpu = w.get(r, {}).get("broker_cpu_s", {}).get("NYC")
        if cpu is not None:
            cells.append(f"{r} {cpu:,.1f}")
    return ["", "target broker CPU s over the copy: " + ", ".join(cells)] if cells else []


def table(workloads: dict[str, Any]) -> str:
    """The run's figures as Markdown tables (printed, and pasted into docs/benchmarks.md)."""
    out: list[str] = []
    if w1 := workloads.get("W1"):
        out.append(
            f"W1 catch-up: {w1['records']:,} records x {w1['record_size']} B, "
            f"{w1['partitions']} partitions"
        )
        out += _runs(w1, ("aa", "mm2", "rawcopy", "ceiling", "broker"), _COPY, _copy_cells)
        out += _disk_lines(w1)
        out += _broker_cpu_lines(w1)
        if (synced := w1.get("aa", {}).get("sync_records")) is not None:
            per = synced / w1["records"] * 1000
            out.append(f"\naa's offset syncs: {synced:,} records, {per:.2f} per 1,000 copied")
        if "ceiling" in w1:
            c = w1["ceiling"]
            out.append(
                f"\nceiling: source read {_f(c['read']['fetch_records_per_s'])} records/s "
                f"(ConsumerPerformance), target write {_f(c['write']['records_per_s'])} "
                "records/s (ProducerPerformance); machine CPU % over each tool's runs: read "
                f"{_pcts(c, 'read')}, write {_pcts(c, 'write')}"
            )
        out += _ratio_lines(w1)
    if w2 := workloads.get("W2"):
        out.append(
            f"W2 steady: {w2['rate']:,} records/s for {w2['duration_s']} s, latency origin "
            "timestamp -> arrival at target"
        )
        latency = ("p50 ms", "p99 ms", "p99.9 ms", "max ms", "CPU s/M records", "peak RSS MB")
        out += _runs(w2, ("aa", "mm2", "ceiling"), latency, _latency_cells)
        out += _ratio_lines(w2)
    if w3 := workloads.get("W3"):
        out.append(
            f"W3 full mesh: 3 DCs, {w3['rate_per_dc']:,} records/s per DC for "
            f"{w3['duration_s']} s (per process: 2 inbound flows)"
        )
        per_process = ("CPU s per M records (per process)", "peak RSS MB (per process)")
        out += _runs(w3, ("aa", "mm2"), ("processes", *per_process, "drain s"), _mesh_cells, left=1)
        out += _ratio_lines(w3)
    if w4 := workloads.get("W4"):
        out.append(
            f"W4 across a WAN: {w4['records']:,} records x {w4['record_size']} B, "
            f"{w4['partitions']} partitions, one flow SF->NYC, the source {w4['rtt_ms']:g} ms "
            "RTT away (bench.wan proxy)"
        )
        out += _runs(
            w4,
            ("aa", "mm2"),
            (*_COPY, "proxy CPU s"),
            lambda x: [*_copy_cells(x), _f(x.get("proxy_cpu_s"), 1)],
        )
        out += _disk_lines(w4)
        out += _ratio_lines(w4)
    return "\n".join(out)


def _ratio_lines(w: dict[str, Any]) -> list[str]:
    out = [""]
    if w.get("ratios"):
        out += ["ratios: " + ", ".join(f"{k} = {_f(v, 2)}" for k, v in w["ratios"].items()), ""]
    if load := w.get("load_avg"):
        out += [
            f"machine load average (1/5/15 min) at start {_f(load['start'], 1)}, "
            f"at end {_f(load['end'], 1)}",
            "",
        ]
    return out


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def markdown(doc: dict[str, Any]) -> str:
    """A docs/benchmarks.md section for one result file: machine, command, tables, configs."""
    m = doc["machine"]
    lines = [
        f"Run {doc['started_at'][:19]}Z on {m['cpu_model']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB; Python {m['python']}, {m['java']}, Kafka {m['kafka']}, aiokafka "
        f"{m['aiokafka']}, aa {m['aa_commit']}. Load average at start "
        f"{'/'.join(f'{x:.1f}' for x in m['load_avg_start'])}, at end "
        f"{'/'.join(f'{x:.1f}' for x in m.get('load_avg_end', []))}. Brokers: {doc['brokers']}.",
        "",
        "```bash",
        doc["command"],
        "```",
        "",
        table(doc["workloads"]),
        "",
        "Configs used (written by the harness; also in the result JSON):",
    ]
    shown: dict[tuple[str, str], str] = {}  # (runner, text with the workload blanked) -> first
    for workload, by_runner in doc.get("configs", {}).items():
        for runner, text in by_runner.items():
            key = (runner, re.sub(r"bench-w\d-", "bench-wN-", text))
            if key in shown:
                lines += ["", f"{workload} {runner}: as {shown[key]} {runner}, with its own topic."]
                continue
            shown[key] = workload
            kind = "yaml" if runner == "aa" else "properties"
            lines += ["", f"{workload} {runner}:", "", f"```{kind}", text.rstrip(), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(orjson.loads(Path(sys.argv[1]).read_bytes())))
