"""docker/ cannot be run here (no Docker engine), so it is checked by parsing: every service,
port, command and metric name the compose file, the Prometheus scrape config and the Grafana
dashboard use exists in aa — metric names are read from aa's own registry."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics_core import Metric

from aa.cli.main import build_parser
from aa.config import load_config
from aa.dev.artifacts import KAFKA_VERSION
from aa.observe.metrics import Metrics

pytestmark = pytest.mark.unit

DOCKER = Path(__file__).resolve().parents[3] / "docker"
ROOT = DOCKER.parent
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    return doc


def _aa_series() -> set[str]:
    """Every series name aa's registry can export."""
    families: list[Metric] = list(Metrics().registry.collect())
    return {f.name + s for f in families for s in SUFFIXES.get(f.type, ("",))}


def _container_port(mapping: str) -> int:
    return int(mapping.rsplit(":", 1)[1])


def test_compose_has_three_kafka_dcs_a_mirror_per_dc_reconcile_prometheus_grafana() -> None:
    services = _compose()["services"]
    assert set(services) == {
        "sf", "nyc", "lon", "aa-sf", "aa-nyc", "aa-lon", "reconcile", "out-owner", "prometheus",
        "grafana",
    }  # fmt: skip
    topology = load_config(DOCKER / "topology.yaml")
    for dc in topology.dc_names:
        kafka = services[dc.lower()]
        assert kafka["image"] == f"apache/kafka:{KAFKA_VERSION}", "the image aa defaults to"
        env = kafka["environment"]
        host, port = topology.datacenter(dc).bootstrap.split(":")
        assert host == dc.lower() == kafka["hostname"]
        assert f"INTERNAL://{host}:{port}" in env["KAFKA_ADVERTISED_LISTENERS"]
        assert f"INTERNAL://:{port}" in env["KAFKA_LISTENERS"]
        external = _container_port(kafka["ports"][0])
        assert f"EXTERNAL://:{external}" in env["KAFKA_LISTENERS"]
        assert f"EXTERNAL://localhost:{external}" in env["KAFKA_ADVERTISED_LISTENERS"]
        voter = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split("@")[1]
        assert voter.split(":")[0] == host
        assert f"CONTROLLER://:{voter.split(':')[1]}" in env["KAFKA_LISTENERS"]


def test_every_aa_command_in_compose_parses_and_serves_the_scraped_port() -> None:
    services = _compose()["services"]
    topology = load_config(DOCKER / "topology.yaml")
    assert topology.metrics.host == "0.0.0.0"
    parser = build_parser()
    mounted = "./topology.yaml:/etc/aa/topology.yaml:ro"
    runs = {}
    for name in ("aa-sf", "aa-nyc", "aa-lon", "reconcile"):
        svc = services[name]
        assert mounted in svc["volumes"], name
        args = parser.parse_args(svc["command"])
        assert Path(args.config) == Path("/etc/aa/topology.yaml")
        if name != "reconcile":
            assert args.command == "run"
            assert args.dc in topology.dc_names
            runs[name] = args.metrics_port or topology.metrics.port
            assert _container_port(svc["ports"][0]) == runs[name]
            assert svc["build"]["target"] == "mirror"
        else:
            assert args.command == "reconcile"
            assert svc["build"]["target"] == "reconcile"
    assert {a.dc for a in (parser.parse_args(services[n]["command"]) for n in runs)} == set(
        topology.dc_names
    )
    scrape = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    targets = [
        t for job in scrape["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]
    ]
    assert sorted(targets) == sorted(f"{n}:{p}" for n, p in runs.items())
    assert all(job["metrics_path"] == "/metrics" for job in scrape["scrape_configs"])
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in services["prometheus"]["volumes"]


def test_the_reports_folder_is_writable_on_a_first_run() -> None:
    """Issue 35, item 9: ./out does not exist before the first run, so Docker creates it owned
    by root, and the reconcile container runs as the user aa: it could not write its report. A
    one-shot step of the same image, as root, hands the folder to aa before the job starts."""
    services = _compose()["services"]
    job, owner = services["reconcile"], services["out-owner"]
    [mount] = [v for v in job["volumes"] if v.endswith(":/out")]
    assert mount in owner["volumes"]
    assert owner["user"] == "root"
    assert owner["entrypoint"] == ["chown", "aa:aa", "/out"]
    assert (owner["image"], owner["build"]) == (job["image"], job["build"])
    assert owner["profiles"] == job["profiles"]  # `docker compose run reconcile` starts it
    assert job["depends_on"]["out-owner"] == {"condition": "service_completed_successfully"}
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert "useradd --create-home --uid 1000 aa" in dockerfile
    assert dockerfile.rstrip().split("USER ")[-1].startswith("aa"), "the job runs as aa"


def test_dockerfile_targets_and_copied_paths_exist() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    stages = re.findall(r"^FROM \S+ AS (\S+)$", text, flags=re.MULTILINE)
    assert stages == ["mirror", "reconcile"]
    for src in re.findall(r"^COPY (.+) \S+$", text, flags=re.MULTILINE):
        for path in src.split():
            assert (ROOT / path).exists(), path
    assert 'ENTRYPOINT ["aa"]' in text


def test_grafana_dashboard_uses_only_aa_metrics_and_covers_what_operators_watch() -> None:
    services = _compose()["services"]
    provisioning = DOCKER / "grafana" / "provisioning"
    datasource = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())
    [ds] = datasource["datasources"]
    assert ds["url"] == "http://prometheus:9090"
    assert _container_port(services["prometheus"]["ports"][0]) == 9090
    provider = yaml.safe_load((provisioning / "dashboards" / "aa.yml").read_text())
    dash_dir = provider["providers"][0]["options"]["path"]
    assert f"./grafana/dashboards:{dash_dir}:ro" in services["grafana"]["volumes"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in services["grafana"]["volumes"]

    dashboard = json.loads((DOCKER / "grafana" / "dashboards" / "aa.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert all(
        t["datasource"]["uid"] == ds["uid"] for p in dashboard["panels"] for t in p["targets"]
    )
    used = {m for e in exprs for m in re.findall(r"\baa_[a-z_]+", e)}
    known = _aa_series()
    assert used <= known, f"not exported by aa: {sorted(used - known)}"
    # records and bytes, lag in records and seconds, latency, heartbeats, errors, restarts,
    # dead letters: every metric family an operator needs has a panel
    families = {f.name for f in Metrics().registry.collect()}
    covered = {f for f in families if any(u.startswith(f) for u in used)}
    assert families - covered <= {"aa_consumer_lag_records", "aa_checkpoints_written"}, sorted(
        families - covered
    )
    assert any("histogram_quantile(0.99" in e for e in exprs)
