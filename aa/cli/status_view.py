"""How `aa status` draws what it read: per DC a heading and a compact table of its inbound
flows, then each error on its own lines. Every cell is short (an 80-column terminal holds a
3-DC mesh's table without breaking a word); errors, which say what to fix, are never cut."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from aa.cli.status_model import DcStatus, FlowStatus

STATE_STYLE = {"running": "green", "starting": "cyan", "backoff": "yellow", "failed": "bold red"}
COLUMNS = ("flow", "state", "lag", "lag s", "latency", "heartbeat", "restarts", "catch-up")
RIGHT = frozenset({"lag", "lag s", "restarts"})


def _num(v: float | None, fmt: str = "{:.1f}", unit: str = "") -> str:
    return "-" if v is None else fmt.format(v) + unit


def eta(f: FlowStatus) -> str:
    """The catch-up cell: ``caught up``, ``1,234/s ETA 12s``, or why there is no ETA."""
    if f.lag_records == 0:
        return "caught up"
    if f.lag_stale_s is not None:
        return f"no lag read for {f.lag_stale_s:.0f}s"
    if f.rate and f.eta_s is not None:
        return f"{f.rate:,.0f}/s ETA {f.eta_s:.0f}s"
    return "-"


def _latency(f: FlowStatus) -> str:
    """p50/p99 in milliseconds."""
    if f.latency_p50_s is None or f.latency_p99_s is None:
        return "-"
    return f"{f.latency_p50_s * 1000:.0f}/{f.latency_p99_s * 1000:.0f}ms"


def _heading(d: DcStatus) -> Text:
    head = Text(f"{d.dc}  {d.bootstrap}  ", style="bold")
    head.append(
        "reachable" if d.reachable else f"UNREACHABLE ({d.error})",
        style="green" if d.reachable else "bold red",
    )
    head.append(f"  aa run: {d.process or 'no --metrics URL'}")
    if d.process_error:
        head.append(f" ({d.process_error})", style="red")
    return head


def _short_state(state: str) -> str:
    """The state's word for its cell (``waiting``); the rest (``: SF unreachable since ...``) is
    shown under the table."""
    return state.split(":", 1)[0]


def _table(d: DcStatus, stale_after_s: float) -> Table:
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0, 0, 1))
    for col in COLUMNS:
        t.add_column(col, justify="right" if col in RIGHT else "left", no_wrap=True)
    for f in d.flows:
        stale = (f.heartbeat_age_s or 0) > stale_after_s
        state = _short_state(f.state)
        t.add_row(
            f.flow,
            Text(state, style=STATE_STYLE.get(state, "yellow")),
            _num(f.lag_records, "{:,}"),
            _num(f.lag_seconds),
            _latency(f),
            Text(_num(f.heartbeat_age_s, unit="s"), style="red" if stale else ""),
            _num(f.restarts, "{}"),
            eta(f),
        )
    return t


def _errors(d: DcStatus) -> list[Padding]:
    """One entry per flow or background task with an error: its name, state and message,
    indented (wrapped lines too)."""
    out: list[Text] = []
    for f in d.flows:
        if _short_state(f.state) != f.state:
            out.append(Text(f"{f.flow} {f.state}", style="yellow"))
        if f.last_error:
            out.append(Text(f"{f.flow} ({_short_state(f.state)}): {f.last_error}", style="red"))
        for topic, why in f.failed_topics.items():
            out.append(Text(f"{f.flow} topic {topic} failed: {why}", style="red"))
        if f.paused:
            out.append(Text(f"{f.flow} paused: {', '.join(f.paused)}", style="yellow"))
    for name, task in sorted(d.tasks.items()):
        if task.get("restarts") or task.get("last_error"):
            line = (
                f"task {name} ({task.get('state')}, {task.get('restarts', 0)} restarts): "
                f"{task.get('last_error') or '-'}"
            )
            out.append(Text(line, style="yellow"))
    return [Padding(t, (0, 0, 0, 2), expand=False) for t in out]


def render(dcs: list[DcStatus], stale_after_s: float) -> Group:
    parts: list[RenderableType] = []
    for d in dcs:
        parts += [_heading(d), _table(d, stale_after_s), *_errors(d), Text("")]
    return Group(*parts[:-1])
