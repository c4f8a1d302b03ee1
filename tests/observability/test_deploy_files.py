"""The dashboard, the Prometheus scrape configuration and compose.yaml, validated as files
(no container engine here): valid JSON / YAML, wired together, and every metric a dashboard
query names exists in the metric catalogue."""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path
from typing import Any

import yaml

from cqs.observability.metrics import CATALOG, sample_names
from cqs.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "cqs-dashboard.json"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
PROVISIONING = ROOT / "deploy" / "grafana" / "provisioning"
COMPOSE = ROOT / "compose.yaml"
METRIC_NAME = re.compile(r"\bcqs_[a-z0-9_]+")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    queries += [v["definition"] for v in dashboard["templating"]["list"]]
    return queries


def test_the_dashboard_is_valid_json_with_panels_that_all_query_something() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    graphs = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len(graphs) >= 12
    assert all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in graphs)
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def test_every_metric_the_dashboard_queries_exists() -> None:
    known = sample_names()
    referenced = {name for query in dashboard_queries() for name in METRIC_NAME.findall(query)}
    assert referenced, "the dashboard queries cqs metrics"
    assert referenced - known == set()


def test_the_dashboard_covers_what_operators_watch() -> None:
    referenced = " ".join(dashboard_queries())
    for needed in (
        "cqs_queue_visible_messages", "cqs_queue_oldest_message_age_seconds",
        "cqs_api_requests_total", "cqs_api_request_duration_seconds_bucket",
        "cqs_cache_hits_total", "cqs_queue_cache_state",
        "cqs_cache_serving_from_store_seconds_total",
        "cqs_backend_request_duration_seconds_bucket", "cqs_backend_errors_total",
    ):
        assert needed in referenced, needed


def test_the_prometheus_config_scrapes_cqs_metrics_on_its_port() -> None:
    config = load_yaml(PROMETHEUS)
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "cqs"]
    assert job["metrics_path"] == "/metrics"
    targets = [t for group in job["static_configs"] for t in group["targets"]]
    assert targets == [f"cqs:{Settings().port}"]


def test_compose_wires_cqs_to_redis_cassandra_prometheus_and_grafana() -> None:
    compose = load_yaml(COMPOSE)
    services = compose["services"]
    assert set(services) >= {"cqs", "redis", "cassandra", "prometheus", "grafana"}
    cqs = services["cqs"]
    assert cqs["build"] == "."
    assert (ROOT / "Dockerfile").is_file()
    environment = cqs["environment"]
    assert environment["CQS_REDIS_URLS"] == "redis://redis:6379/0"
    assert environment["CQS_CASSANDRA_HOSTS"] == "cassandra:9042"
    assert "CQS_CASSANDRA_PROTOCOL_VERSION" not in environment  # negotiated
    assert int(environment["CQS_WORKERS"]) >= 2
    assert f"{Settings().port}:{Settings().port}" in cqs["ports"]
    assert set(cqs["depends_on"]) == {"redis", "cassandra"}
    assert services["cassandra"]["image"] in ("cassandra:5.0", "cassandra:4.1")

    mounted = {v.split(":")[0]: v.split(":")[1] for v in services["prometheus"]["volumes"]}
    assert mounted["./deploy/prometheus/prometheus.yml"] == "/etc/prometheus/prometheus.yml"
    grafana = {v.split(":")[0]: v.split(":")[1] for v in services["grafana"]["volumes"]}
    assert grafana["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    dashboards_dir = load_yaml(PROVISIONING / "dashboards" / "cqs.yml")["providers"][0][
        "options"]["path"]
    assert grafana["./deploy/grafana/cqs-dashboard.json"] == f"{dashboards_dir}/cqs-dashboard.json"
    for path in list(mounted) + list(grafana):
        assert (ROOT / path).exists(), path


def test_the_grafana_datasource_points_at_the_compose_prometheus() -> None:
    (source,) = load_yaml(PROVISIONING / "datasources" / "prometheus.yml")["datasources"]
    assert source["url"] == "http://prometheus:9090"
    dashboard = json.loads(DASHBOARD.read_text())
    uids = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    assert uids == {source["uid"]}


def test_every_metric_is_named_by_convention_and_documented() -> None:
    documentation = (ROOT / "docs" / "metrics.md").read_text()
    names = [metric.name for metric in CATALOG]
    assert len(names) == len(set(names))
    for metric in CATALOG:
        assert re.fullmatch(r"cqs_[a-z_]+", metric.name), metric.name
        assert metric.name.endswith("_total") == (metric.kind == "counter"), metric.name
        assert f"`{metric.name}`" in documentation, metric.name


def test_the_image_copies_every_package_and_module_setup_cfg_installs() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    packages = {
        name for name in config["options.packages.find"]["include"].split()
        if "." not in name
    }
    modules = {f"{name}.py" for name in config["options"].get("py_modules", "").split()}
    copied = {
        source.rstrip("/")
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    }
    assert packages | modules <= copied
    assert all((ROOT / source).exists() for source in copied), copied  # else the build fails
