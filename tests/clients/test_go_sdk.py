"""The scenario through the AWS SDK for Go v2 (`service/sqs`, query protocol), unmodified, as
Debian packages it (golang-github-aws-aws-sdk-go-v2-dev, built with Debian's golang-go;
`./scripts/bootstrap --test` installs both).

go/main.go is built here, offline, in GOPATH mode over the packaged sources (no module
download; about 5 s cold), then prints one JSON line per step; every step's check is
scenario.py's, each its own test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients import scenario
from tests.clients.conftest import MakePlan

GO = Path(__file__).resolve().parent / "go"
GOPATH = Path("/usr/share/gocode")
SQS_SOURCE = GOPATH / "src/github.com/aws/aws-sdk-go-v2/service/sqs"


def packaged_sqs_version() -> str:
    metadata = (SQS_SOURCE / "go_module_metadata.go").read_text()
    found = re.search(r'goModuleVersion = "([^"]+)"', metadata)
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="module")
def run(make_plan: MakePlan) -> tuple[dict[str, Any], scenario.Observations]:
    go = shutil.which("go")
    assert go and SQS_SOURCE.is_dir(), "run ./scripts/bootstrap --test (golang-go, the SDK)"
    environment = {**os.environ, "GO111MODULE": "off", "GOPATH": str(GOPATH),
                   "GOPROXY": "off", "GOFLAGS": ""}
    binary = GO / ".build" / "sqs-scenario"
    built = subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO, env=environment,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    plan = make_plan()
    done = subprocess.run([str(binary), json.dumps(plan)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return plan, scenario.parse(done.stdout.splitlines())


def test_the_go_sdk_is_debians_and_speaks_the_query_protocol(
    run: tuple[dict[str, Any], scenario.Observations],
) -> None:
    serializers = (SQS_SOURCE / "serializers.go").read_text()
    assert "awsAwsquery_serializeOpSendMessage" in serializers
    assert run[1]["client"]["version"] == "service/sqs 2012-11-05"
    assert packaged_sqs_version().startswith("1.")


@pytest.mark.parametrize("step", scenario.STEPS)
def test_go_scenario_step(run: tuple[dict[str, Any], scenario.Observations], step: str) -> None:
    plan, observed = run
    scenario.check(step, observed, plan)
