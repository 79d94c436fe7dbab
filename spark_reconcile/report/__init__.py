"""The human-readable report: one self-contained HTML page with inline SVG charts."""

from spark_reconcile.report.html import render_html

__all__ = ["render_html"]
