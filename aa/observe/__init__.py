"""Observability: Prometheus metrics and the /metrics + /healthz endpoint."""
