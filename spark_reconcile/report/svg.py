"""Tiny inline SVG charts (no JavaScript, no dependencies): bars and lines over time buckets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 720, 240, 60, 40, 16, 140
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _label(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%m-%d %H:%M")


def _frame(xs: Sequence[int], ymax: float, unit: str) -> list[str]:
    parts = [
        f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#333"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#333"/>',
        f'<text x="{PAD_L - 6}" y="{PAD_T + 4}" text-anchor="end" font-size="10">{ymax:g}</text>',
        f'<text x="{PAD_L - 6}" y="{H - PAD_B}" text-anchor="end" font-size="10">0</text>',
        f'<text x="8" y="{PAD_T + 4}" font-size="10">{escape(unit)}</text>',
    ]
    if xs:
        for x, anchor in ((xs[0], "start"), (xs[-1], "end")):
            px = PAD_L if anchor == "start" else W - PAD_R
            parts.append(
                f'<text x="{px}" y="{H - PAD_B + 14}" text-anchor="{anchor}" font-size="10">'
                f"{_label(x)} UTC</text>"
            )
    return parts


def _x(i: int, n: int) -> float:
    span = W - PAD_L - PAD_R
    return PAD_L + (span * (i + 0.5) / max(n, 1))


def _y(v: float, ymax: float) -> float:
    return H - PAD_B - (H - PAD_B - PAD_T) * (v / ymax if ymax else 0)


def _svg(parts: list[str], title: str) -> str:
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>\n{body}\n</svg>'
    )


def bar_chart(series: Mapping[int, float], title: str, unit: str) -> str:
    """One bar per bucket (epoch ms -> value)."""
    xs = sorted(series)
    ymax = max([series[x] for x in xs] + [1.0])
    parts = _frame(xs, ymax, unit)
    bw = max(1.0, (W - PAD_L - PAD_R) / max(len(xs), 1) * 0.8)
    for i, x in enumerate(xs):
        v = series[x]
        y = _y(v, ymax)
        parts.append(
            f'<rect x="{_x(i, len(xs)) - bw / 2:.1f}" y="{y:.1f}" width="{bw:.1f}" '
            f'height="{H - PAD_B - y:.1f}" fill="{COLORS[1]}"><title>{_label(x)}: {v:g}'
            "</title></rect>"
        )
    if not xs:
        parts.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">nothing missing</text>')
    return _svg(parts, title)


def line_chart(series: Mapping[str, Mapping[int, float]], title: str, unit: str) -> str:
    """One polyline per named series (name -> bucket -> value), with a legend."""
    xs = sorted({x for s in series.values() for x in s})
    ymax = max([v for s in series.values() for v in s.values()] + [1.0])
    parts = _frame(xs, ymax, unit)
    index = {x: i for i, x in enumerate(xs)}
    for n, (name, points) in enumerate(sorted(series.items())):
        color = COLORS[n % len(COLORS)]
        coords = " ".join(
            f"{_x(index[x], len(xs)):.1f},{_y(points[x], ymax):.1f}" for x in sorted(points)
        )
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        ly = PAD_T + 14 * n + 4
        parts.append(
            f'<text x="{W - PAD_R + 8}" y="{ly}" font-size="11" fill="{color}">'
            f"{escape(name)}</text>"
        )
    if not xs:
        parts.append(
            f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no measured copies</text>'
        )
    return _svg(parts, title)
