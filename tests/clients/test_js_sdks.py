"""The scenario through the AWS SDK for JavaScript, unmodified: v3 (`@aws-sdk/client-sqs`,
AWS JSON 1.0) and v2 (`aws-sdk`), at the versions pinned in js/package-lock.json, run by
Node (`./scripts/bootstrap --test` installs them with `npm ci`).

js/scenario.mjs prints one JSON line per step; every step's check is scenario.py's, each
its own test, per SDK.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients import scenario
from tests.clients.conftest import MakePlan

JS = Path(__file__).resolve().parent / "js"
SDKS = {"v3": ("@aws-sdk/client-sqs", "json"), "v2": ("aws-sdk", "json")}


def locked_version(package: str) -> str:
    lock = json.loads((JS / "package-lock.json").read_text())
    return str(lock["packages"][f"node_modules/{package}"]["version"])


@pytest.fixture(scope="module", params=sorted(SDKS))
def run(
    request: pytest.FixtureRequest, make_plan: MakePlan
) -> tuple[str, dict[str, Any], scenario.Observations]:
    node = shutil.which("node")
    assert node and (JS / "node_modules").is_dir(), "run ./scripts/bootstrap --test (npm ci)"
    plan = make_plan()
    done = subprocess.run([node, "scenario.mjs", request.param, json.dumps(plan)], cwd=JS,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return request.param, plan, scenario.parse(done.stdout.splitlines())


def test_the_sdk_is_the_locked_version(
    run: tuple[str, dict[str, Any], scenario.Observations],
) -> None:
    sdk, _, observed = run
    package, protocol = SDKS[sdk]
    assert observed["client"]["version"] == locked_version(package)
    assert observed["client"]["protocol"] == protocol


@pytest.mark.parametrize("step", scenario.STEPS)
def test_js_scenario_step(
    run: tuple[str, dict[str, Any], scenario.Observations], step: str
) -> None:
    _, plan, observed = run
    scenario.check(step, observed, plan)
