"""What `aa status` shows, computed purely from what it read: lag from committed state, the
heartbeats each DC received, and (when a DC's `aa run` is reachable) its `/healthz` and
`/metrics`. No I/O here, so every rule is unit-tested."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from aa.config import Topology
from aa.heartbeat.model import HeartbeatView
from aa.lag import PartitionLag


@dataclass(slots=True)
class ProcessSnapshot:
    """One `aa run` process as read from its HTTP port."""

    url: str
    health: dict[str, Any] | None = None
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    """flow name (``A->B``) -> values (see :func:`flow_metrics`)."""
    error: str | None = None


@dataclass(slots=True)
class FlowStatus:
    """One inbound flow's row of `aa status` (and an element of ``flows`` in ``--json``)."""

    flow: str
    source: str
    target: str
    state: str = "unknown"
    """The process's state of the flow (``running``, ``backoff``, ``failed``...), else ``no
    process``, ``DC down`` or ``X down`` (its source X is down); ``unknown`` when nothing says."""
    lag_records: int | None = None
    """Source records not yet committed by the flow, from the committed offsets."""
    lag_seconds: float | None = None
    """Age of the oldest such record, over the flow's partitions."""
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    """Seconds from a record's write in the source to its copy's write in the target: the
    median and the 99th percentile of the process's latency histogram."""
    heartbeat_age_s: float | None = None
    """How long ago the target last received the source's heartbeat."""
    heartbeat_latency_s: float | None = None
    restarts: int | None = None
    last_error: str | None = None
    """The flow's last error as its process reports it (``restarts`` counts the restarts it
    caused); while it is set the flow is not healthy."""
    records: float | None = None
    """Records the process copied for this flow since it started."""
    rate: float | None = None
    """Records per second copied (catch-up), when known."""
    eta_s: float | None = None
    """Seconds until caught up at ``rate``."""
    lag_stale_s: float | None = None
    """Set when the process's lag figure is this many seconds old (its lag reads fail)."""
    paused: list[str] = field(default_factory=list)
    """What an operator paused in the flow (``flow``, ``flow/topic``, ``flow/topic/partition``)."""
    failed_topics: dict[str, str] = field(default_factory=dict)
    """Topics stopped by a refusal no retry fixes: topic -> reason, partition and offset."""

    @property
    def healthy(self) -> bool:
        return self.state in ("running", "starting", "unknown") and self.last_error is None


@dataclass(slots=True)
class DcStatus:
    dc: str
    bootstrap: str
    reachable: bool
    error: str | None
    process: str | None
    process_error: str | None
    flows: list[FlowStatus]
    tasks: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["flows"] = [asdict(f) for f in self.flows]
        return out


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' ``histogram_quantile`` over cumulative ``(le, count)`` buckets: linear
    interpolation inside the bucket holding the q-th observation."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return prev_le


def flow_metrics(
    text: str, heartbeats: Callable[[str], bool] | None = None
) -> dict[str, dict[str, float]]:
    """:func:`families_by_flow` of a `/metrics` page (another process's)."""
    return families_by_flow(text_string_to_metric_families(text), heartbeats)


def families_by_flow(
    families: Iterable[Metric], heartbeats: Callable[[str], bool] | None = None
) -> dict[str, dict[str, float]]:
    """Per flow (``source->target``) from metric families (a parsed `/metrics` page, or a
    registry's ``collect()`` in the process itself): ``records``, ``lag_records``,
    ``lag_seconds``, ``latency_p50_s``, ``latency_p99_s``, ``restarts``, ``errors``,
    ``dead_lettered``; and per ``local<-remote`` heartbeat ``heartbeat_age_s``. Series of a
    topic ``heartbeats`` names (:func:`aa.lag.holds_heartbeats`) are left out: records and lag
    describe the user's data."""
    out: dict[str, dict[str, float]] = {}
    buckets: dict[str, list[tuple[float, float]]] = {}

    def slot(labels: Mapping[str, str]) -> dict[str, float] | None:
        if "source" in labels and "target" in labels:
            return out.setdefault(f"{labels['source']}->{labels['target']}", {})
        if "local" in labels and "remote" in labels:
            return out.setdefault(f"{labels['remote']}->{labels['local']}", {})
        return None

    sums = {
        "aa_records_replicated_total": "records",
        "aa_committed_lag_records": "lag_records",
        "aa_flow_restarts_total": "restarts",
        "aa_errors_total": "errors",
        "aa_records_dead_lettered_total": "dead_lettered",
    }
    maxes = {
        "aa_committed_lag_seconds": "lag_seconds",
        "aa_committed_lag_read_timestamp_seconds": "lag_read_at",
        "aa_heartbeat_age_seconds": "heartbeat_age_s",
        "aa_heartbeat_latency_seconds": "heartbeat_latency_s",
    }
    for family in families:
        for s in family.samples:
            d = slot(s.labels)
            if d is None or (heartbeats and heartbeats(s.labels.get("topic", ""))):
                continue
            if s.name in sums:
                key = sums[s.name]
                d[key] = d.get(key, 0.0) + s.value
            elif s.name in maxes:
                key = maxes[s.name]
                d[key] = max(d.get(key, 0.0), s.value)
            elif s.name == "aa_replication_latency_seconds_bucket":
                flow = f"{s.labels['source']}->{s.labels['target']}"
                buckets.setdefault(flow, []).append((float(s.labels["le"]), s.value))
    for flow, b in buckets.items():
        for q, key in ((0.5, "latency_p50_s"), (0.99, "latency_p99_s")):
            v = histogram_quantile(q, b)
            if v is not None:
                out.setdefault(flow, {})[key] = v
    return out


def build(
    topology: Topology,
    reach: Mapping[str, str | None],
    lag: Mapping[str, list[PartitionLag] | str],
    heartbeats: Mapping[str, HeartbeatView | str],
    processes: Mapping[str, ProcessSnapshot],
    now_ms: int,
) -> list[DcStatus]:
    """One :class:`DcStatus` per DC with a row per inbound flow. ``reach`` maps a DC to why it
    is unreachable (None: it answers); ``lag`` a flow name to its partitions or an error."""
    out = []
    for dc in topology.dc_names:
        proc = processes.get(dc)
        health = (proc.health or {}) if proc else {}
        flows_health = health.get("flows", {})
        catch_up = health.get("catch_up", {})
        rows = []
        for f in topology.inbound(dc):
            row = FlowStatus(f.name, f.source, f.target)
            parts = lag.get(f.name)
            if isinstance(parts, list):
                row.lag_records = sum(p.records for p in parts)
                secs = [p.seconds for p in parts if p.seconds is not None]
                row.lag_seconds = max(secs) if secs else 0.0
            view = heartbeats.get(dc)
            if isinstance(view, HeartbeatView) and (remote := view.remotes.get(f.source)):
                row.heartbeat_age_s = round(remote.age_s(now_ms), 3)
                row.heartbeat_latency_s = round(remote.latency_s, 3)
            if proc is not None:
                m = proc.metrics.get(f.name, {})
                row.latency_p50_s = m.get("latency_p50_s")
                row.latency_p99_s = m.get("latency_p99_s")
                row.records = m.get("records")
                if row.heartbeat_age_s is None and "heartbeat_age_s" in m:
                    row.heartbeat_age_s = m["heartbeat_age_s"]
                h = flows_health.get(f.name)
                if h:
                    row.state = str(h.get("state", "unknown"))
                    if h.get("waiting"):  # backing off while a DC it needs is away
                        row.state = f"waiting: {h['waiting']}"
                    row.restarts = int(h.get("restarts") or 0)
                    row.last_error = h.get("last_error")
                    row.paused = list(h.get("paused") or [])
                    row.failed_topics = {
                        t: f"{v.get('reason')} (partition {v.get('partition')}, offset "
                        f"{v.get('offset')}, {v.get('attempts')} tries)"
                        for t, v in (h.get("failed_topics") or {}).items()
                    }
                c = catch_up.get(f.name)
                if c:
                    row.rate = c.get("rate")
                    row.eta_s = c.get("eta_s")
                    row.lag_stale_s = c.get("lag_stale_s")
            elif reach.get(dc) is None:
                row.state = "no process"
            if reach.get(dc) is not None and row.state == "unknown":
                row.state = "DC down"
            if reach.get(f.source) is not None and row.state in ("unknown", "no process"):
                row.state = f"{f.source} down"
            rows.append(row)
        out.append(
            DcStatus(
                dc,
                topology.datacenter(dc).bootstrap,
                reach.get(dc) is None,
                reach.get(dc),
                proc.url if proc else None,
                proc.error if proc else None,
                rows,
                dict(health.get("tasks", {})),
            )
        )
    return out


def problems(dcs: list[DcStatus], stale_after_s: float) -> list[str]:
    """What makes the exit code 1: an unreachable DC, an `aa run` that does not answer, a flow
    not known to run, a stale heartbeat. A flow is known to run when its process says
    ``running``, or, with no process URL for its DC, when its heartbeat arrives fresh (the
    heartbeat crossed it)."""
    out = []
    for d in dcs:
        if not d.reachable:
            out.append(f"DC {d.dc} unreachable")
            continue  # its flows cannot be read: the DC is the problem
        if d.process_error:
            out.append(f"aa run of {d.dc} at {d.process} does not answer ({d.process_error})")
        for f in d.flows:
            stale = f.heartbeat_age_s is not None and f.heartbeat_age_s > stale_after_s
            beating = f.heartbeat_age_s is not None and not stale
            if f.state == "no process" and not beating:
                out.append(f"flow {f.flow}: no process (no heartbeat; pass --metrics {d.dc}=URL)")
            elif f.state == "unknown" and not d.process_error:
                out.append(f"flow {f.flow}: the aa run at {d.process} does not run it")
            elif f.state not in ("running", "no process", "unknown", f"{f.source} down"):
                out.append(f"flow {f.flow} {f.state}")
            out += [f"flow {f.flow}: topic {t} failed: {why}" for t, why in f.failed_topics.items()]
            if stale:
                out.append(f"heartbeat {f.flow} {f.heartbeat_age_s:.0f}s old")
    return out
