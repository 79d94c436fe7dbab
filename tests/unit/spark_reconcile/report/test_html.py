"""The HTML report (``spark_reconcile.report.html``)."""

from __future__ import annotations

import pytest

from spark_reconcile.report import render_html

pytestmark = pytest.mark.unit


def test_report_renders_charts_and_escapes() -> None:
    summary = {
        "window": {"since": "a", "until": "b"},
        "counts": {"missing": 1},
        "thresholds_crossed": ["missing: 1 > 0"],
        "charts": {
            "missing_per_bucket": {"1700000000000": 1},
            "delay_p99_per_bucket": {"SF->NYC": {"1700000000000": 12.0}},
        },
        "missing_by_flow": [{"origin": "SF", "target": "<NYC>", "count": 1}],
        "delay": [],
        "delay_unmeasured": [],
        "records": [],
        "completeness": [],
        "samples": {},
    }
    html = render_html(summary)
    assert html.count("<svg") == 2
    assert "&lt;NYC&gt;" in html
    assert "Thresholds crossed" in html
