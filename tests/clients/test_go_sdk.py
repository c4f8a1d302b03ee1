"""The scenario through the AWS SDK for Go v2 (`service/sqs`), unmodified, in two builds of
go/scenario.go:

- "current": the newest SDK, as go/go.mod and go.sum pin it, from the Go module proxy. It
  speaks AWS JSON 1.0 (the SDK moved SQS off the query protocol in service/sqs 1.28,
  November 2023).
- "debian": the SDK as Debian packages it (golang-github-aws-aws-sdk-go-v2-dev, service/sqs
  1.19 from 2022), in GOPATH mode. It speaks the query protocol, as does every Go program
  still built on an SDK from before the switch; `./scripts/bootstrap --test` installs it.

Both are built by tests/fixtures/toolchains.py, offline, from the module and build caches
outside the checkout that `./scripts/bootstrap --test` filled (about a second each, warm).
Each prints one JSON line per step; every step's check is scenario.py's, each its own test.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tests.clients import scenario
from tests.clients.conftest import MakePlan
from tests.fixtures import toolchains

Run = tuple[str, dict[str, Any], scenario.Observations]


def pinned_sqs_version() -> str:
    found = re.search(r"github.com/aws/aws-sdk-go-v2/service/sqs (v\S+)",
                      (toolchains.GO_DRIVER / "go.mod").read_text())
    assert found is not None
    return found.group(1)


def packaged_sqs_version() -> str:
    metadata = (toolchains.DEBIAN_SQS_SOURCE / "go_module_metadata.go").read_text()
    found = re.search(r'goModuleVersion = "([^"]+)"', metadata)
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="module", params=["current", "debian"])
def run(request: pytest.FixtureRequest, make_plan: MakePlan) -> Run:
    binary = toolchains.build_go_driver(request.param)
    plan = make_plan()
    done = subprocess.run([str(binary), json.dumps(plan)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return request.param, plan, scenario.parse(done.stdout.splitlines())


def test_the_go_sdk_is_the_pinned_one_on_its_protocol(run: Run) -> None:
    flavor, _, observed = run
    client = observed["client"]
    if flavor == "current":
        assert client["version"] == pinned_sqs_version()
        assert client["protocol"] == "awsJson1_0"
    else:
        serializers = (toolchains.DEBIAN_SQS_SOURCE / "serializers.go").read_text()
        assert "awsAwsquery_serializeOpSendMessage" in serializers
        assert client["version"] == "service/sqs 2012-11-05"
        assert packaged_sqs_version().startswith("1.")


@pytest.mark.parametrize("step", scenario.STEPS)
def test_go_scenario_step(run: Run, step: str) -> None:
    _, plan, observed = run
    scenario.check(step, observed, plan)
