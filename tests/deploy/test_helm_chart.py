"""The Helm chart of the API tier (deploy/helm/cqs): it lints, renders with the default and
the production values, and what it renders is valid Kubernetes, as an operator applying it
would find.

`helm lint --strict` and `helm template` (helm v3, built from the Go module proxy), then
`kubeconform -strict` against the JSON schemas of the oldest Kubernetes the chart supports and
of the newest (read from disk: the `kubernetes-validate` wheel's schemas, see
tests/fixtures/toolchains.py; nothing is fetched). The ServiceMonitor, a prometheus-operator
CRD, is checked against the schema of that CRD as prometheus-operator's Go module ships it,
and against the Service it scrapes. Then what a user relies on: the probes, the secrets
coming only from Secrets, every `CQS_*` variable a real setting.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cqs.settings import ENVIRONMENT_VARIABLES, SECRET_SETTINGS
from tests.fixtures import toolchains

CHART = toolchains.REPOSITORY / "deploy" / "helm" / "cqs"
PRODUCTION = CHART / "values-production.yaml"
SECRET_VARIABLES = {ENVIRONMENT_VARIABLES[name] for name in SECRET_SETTINGS}


def helm(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(toolchains.tool(toolchains.HELM)), *arguments],
                          capture_output=True, text=True, timeout=120)


def render(*values: Path, sets: tuple[str, ...] = (),
           kubernetes_version: str = toolchains.KUBERNETES_VERSIONS[-1]) -> str:
    # helm built by `go install` assumes Kubernetes 1.20 (a release build stamps its own
    # client version): name the cluster's release, as `helm install` learns it from one.
    arguments = ["template", "cqs", str(CHART), "--namespace", "queues",
                 "--kube-version", kubernetes_version]
    for path in values:
        arguments += ["--values", str(path)]
    for assignment in sets:
        arguments += ["--set", assignment]
    done = helm(*arguments)
    assert done.returncode == 0, done.stderr
    return done.stdout


def objects(manifests: str) -> dict[str, dict[str, Any]]:
    return {document["kind"]: document for document in yaml.safe_load_all(manifests) if document}


def kubeconform(manifests: str, kubernetes_version: str) -> dict[str, Any]:
    schemas = toolchains.kubernetes_schemas(kubernetes_version)
    done = subprocess.run(
        [str(toolchains.tool(toolchains.KUBECONFORM)), "-strict", "-summary", "-verbose",
         "-output", "json", "-kubernetes-version", kubernetes_version,
         "-schema-location", f"{schemas}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json", "-"],
        input=manifests, capture_output=True, text=True, timeout=120)
    report: dict[str, Any] = json.loads(done.stdout)
    report["exit_code"] = done.returncode
    return report


@pytest.fixture(scope="module")
def default_manifests() -> str:
    return render()


@pytest.fixture(scope="module")
def production_manifests() -> str:
    return render(PRODUCTION)


@pytest.mark.parametrize("values", [(), (PRODUCTION,)], ids=["default", "production"])
def test_helm_lint_passes_strict(values: tuple[Path, ...]) -> None:
    arguments = ["lint", "--strict", str(CHART), "--kube-version",
                 toolchains.KUBERNETES_VERSIONS[-1]]
    for path in values:
        arguments += ["--values", str(path)]
    done = helm(*arguments)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


@pytest.mark.parametrize("kubernetes_version", toolchains.KUBERNETES_VERSIONS)
def test_default_values_render_valid_kubernetes(kubernetes_version: str) -> None:
    report = kubeconform(render(kubernetes_version=kubernetes_version), kubernetes_version)
    statuses = {(r["kind"], r["status"]) for r in report["resources"]}
    assert statuses == {("Deployment", "statusValid"), ("Service", "statusValid"),
                        ("PodDisruptionBudget", "statusValid"),
                        ("ServiceAccount", "statusValid")}, report
    assert report["exit_code"] == 0


@pytest.mark.parametrize("kubernetes_version", toolchains.KUBERNETES_VERSIONS)
def test_production_values_render_valid_kubernetes(kubernetes_version: str) -> None:
    report = kubeconform(render(PRODUCTION, kubernetes_version=kubernetes_version),
                         kubernetes_version)
    statuses = {(r["kind"], r["status"]) for r in report["resources"]}
    assert statuses == {("Deployment", "statusValid"), ("Service", "statusValid"),
                        ("PodDisruptionBudget", "statusValid"),
                        ("ServiceAccount", "statusValid"),
                        ("HorizontalPodAutoscaler", "statusValid"),
                        ("ServiceMonitor", "statusValid")}, report
    assert report["summary"] == {"valid": 6, "invalid": 0, "errors": 0, "skipped": 0}
    assert report["exit_code"] == 0


@pytest.mark.parametrize(("values", "kind", "field", "misspelt"), [
    ((), "Deployment", "  replicas: 2\n", "  replicas: 2\n  replica: 2\n"),
    ((PRODUCTION,), "ServiceMonitor", "      path: /metrics\n",
     "      path: /metrics\n      paht: /metrics\n"),
], ids=["Deployment", "ServiceMonitor"])
def test_kubeconform_rejects_a_field_the_schema_does_not_have(
    values: tuple[Path, ...], kind: str, field: str, misspelt: str
) -> None:
    manifests = render(*values)
    broken = manifests.replace(field, misspelt, 1)
    assert broken != manifests
    report = kubeconform(broken, toolchains.KUBERNETES_VERSIONS[-1])
    [failure] = [r for r in report["resources"] if r["status"] != "statusValid"]
    assert (failure["kind"], failure["status"]) == (kind, "statusInvalid")
    unknown = misspelt.strip().splitlines()[-1].split(":")[0].strip()
    assert unknown in failure["msg"]
    assert report["exit_code"] != 0


def container(manifests: str) -> dict[str, Any]:
    [only] = objects(manifests)["Deployment"]["spec"]["template"]["spec"]["containers"]
    return dict(only)


@pytest.mark.parametrize("values", [(), (PRODUCTION,)], ids=["default", "production"])
def test_probes_are_ready_for_readiness_and_health_for_liveness(
    values: tuple[Path, ...],
) -> None:
    api = container(render(*values))
    port_names = {port["name"] for port in api["ports"]}
    assert api["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert api["livenessProbe"]["httpGet"]["path"] == "/health"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert api[probe]["httpGet"]["port"] in port_names
    scheme = "HTTPS" if values else "HTTP"  # production serves TLS from its Secret
    assert {api[p]["httpGet"]["scheme"] for p in ("readinessProbe", "livenessProbe")} == {scheme}


@pytest.mark.parametrize("values", [(), (PRODUCTION,)], ids=["default", "production"])
def test_every_variable_is_a_setting_and_every_secret_comes_from_a_secret(
    values: tuple[Path, ...],
) -> None:
    environment = container(render(*values))["env"]
    names = [variable["name"] for variable in environment]
    assert len(names) == len(set(names)), "no variable set twice"
    assert set(names) <= set(ENVIRONMENT_VARIABLES.values())
    for variable in environment:
        if variable["name"] in SECRET_VARIABLES and variable["name"] != "CQS_REDIS_URLS":
            assert "value" not in variable, variable
    if values:
        from_secrets = {v["name"] for v in environment if "valueFrom" in v}
        assert from_secrets == {"CQS_RECEIPT_SECRET", "CQS_ADMIN_PASSWORD",
                                "CQS_CASSANDRA_PASSWORD", "CQS_REDIS_URLS"}


@pytest.mark.parametrize("assignment", [
    "settings.receipt_secret=s3cret", "settings.cassandra_password=s3cret",
    "settings.access_keys=AKID:secret:000000000000", "redis.urls=redis://:s3cret@redis:6379/0",
])
def test_a_secret_given_as_a_plain_value_is_refused(assignment: str) -> None:
    done = helm("template", "cqs", str(CHART), "--set", assignment,
                "--kube-version", toolchains.KUBERNETES_VERSIONS[-1])
    assert done.returncode != 0
    assert "s3cret" not in done.stdout
    assert "secrets" in done.stderr


def test_the_service_monitor_scrapes_the_services_metrics(production_manifests: str) -> None:
    rendered = objects(production_manifests)
    monitor, service = rendered["ServiceMonitor"], rendered["Service"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert (endpoint["path"], endpoint["scheme"]) == ("/metrics", "https")


def test_selectors_match_the_pods_and_autoscaling_owns_the_replica_count(
    default_manifests: str, production_manifests: str,
) -> None:
    for manifests in (default_manifests, production_manifests):
        rendered = objects(manifests)
        pod_labels = rendered["Deployment"]["spec"]["template"]["metadata"]["labels"]
        assert rendered["Service"]["spec"]["selector"].items() <= pod_labels.items()
        budget = rendered["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]
        assert budget.items() <= pod_labels.items()
    assert objects(default_manifests)["Deployment"]["spec"]["replicas"] == 2
    production = objects(production_manifests)
    assert "replicas" not in production["Deployment"]["spec"]
    autoscaler = production["HorizontalPodAutoscaler"]["spec"]
    assert autoscaler["scaleTargetRef"]["name"] == production["Deployment"]["metadata"]["name"]
    [metric] = autoscaler["metrics"]
    assert metric["resource"]["name"] == "cpu"
