"""report.html: the summary as a page a person reads the morning after a nightly run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from spark_reconcile.report.svg import bar_chart, line_chart

CSS = (
    "body{font-family:sans-serif;margin:2em;max-width:1000px}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}"
    ".ok{color:#2ca02c}.bad{color:#d62728}"
)


def _table(rows: Sequence[Mapping[str, Any]], empty: str = "none") -> str:
    if not rows:
        return f"<p><em>{escape(empty)}</em></p>"
    cols = list(rows[0])
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(summary: Mapping[str, Any]) -> str:
    """The whole page from ``summary`` (the same dict written to summary.json)."""
    counts: Mapping[str, int] = summary["counts"]
    crossed: Sequence[str] = summary["thresholds_crossed"]
    status = (
        '<p class="ok"><strong>Within thresholds.</strong></p>'
        if not crossed
        else '<p class="bad"><strong>Thresholds crossed:</strong> '
        + escape("; ".join(crossed))
        + "</p>"
    )
    charts = summary["charts"]
    missing_chart = bar_chart(
        {int(k): float(v) for k, v in charts["missing_per_bucket"].items()},
        "missing records per bucket",
        "records",
    )
    delay_series = {
        flow: {int(k): float(v) for k, v in pts.items()}
        for flow, pts in charts["delay_p99_per_bucket"].items()
    }
    delay_chart = line_chart(delay_series, "replication delay p99 per bucket", "ms")
    w = summary["window"]
    sections = [
        f"<h1>aa reconcile: {escape(str(w['since']))} → {escape(str(w['until']))}</h1>",
        status,
        "<h2>Findings</h2>",
        _table([{"finding": k, "count": v} for k, v in counts.items()]),
        "<h2>Missing records per bucket</h2>",
        missing_chart,
        _table(summary["missing_by_flow"], "nothing missing"),
        "<h2>Replication delay</h2>",
        delay_chart,
        _table(summary["delay"], "no copies with aa-ts in the window"),
        _table(summary["delay_unmeasured"], "every copy carried aa-ts"),
        "<h2>Records per DC and topic</h2>",
        _table(summary["records"], "no records in the window"),
        "<h2>Completeness (not event-sourced topics)</h2>",
        _table(summary["completeness"], "no such topics"),
    ]
    for name in ("missing", "duplicated", "looped", "divergent", "malformed"):
        sections.append(f"<h2>{name} (sample)</h2>")
        sections.append(_table(summary["samples"].get(name, [])))
    if summary.get("repair"):
        sections.append("<h2>Repair</h2>")
        sections.append(_table(summary["repair"]))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>aa reconcile</title>"
        f"<style>{CSS}</style></head><body>{''.join(sections)}</body></html>"
    )
