"""The scenario through the AWS SDK for Rust (`aws-sdk-sqs`, AWS JSON 1.0), unmodified, at
the versions rust/Cargo.lock pins, from crates.io.

rust/src/main.rs is built by tests/fixtures/toolchains.py, offline, in the Cargo home and
target directory outside the checkout that `./scripts/bootstrap --test` filled (a no-op of
about a second when warm). It prints one JSON line per step and, last, the SDK's version with
the Content-Type of every request it sent; every step's check is scenario.py's, each its
own test.
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

Run = tuple[dict[str, Any], scenario.Observations]


def locked_version(crate: str) -> str:
    lock = (toolchains.RUST_DRIVER / "Cargo.lock").read_text()
    found = re.search(rf'name = "{re.escape(crate)}"\nversion = "([^"]+)"', lock)
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="module")
def run(make_plan: MakePlan) -> Run:
    binary = toolchains.build_rust_driver()
    plan = make_plan()
    done = subprocess.run([str(binary), json.dumps(plan)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return plan, scenario.parse(done.stdout.splitlines())


def test_the_rust_sdk_is_the_locked_version_and_speaks_json(run: Run) -> None:
    client = run[1]["client"]
    assert client["version"] == locked_version("aws-sdk-sqs")
    assert client["content_types"] == ["application/x-amz-json-1.0"]


@pytest.mark.parametrize("step", scenario.STEPS)
def test_rust_scenario_step(run: Run, step: str) -> None:
    plan, observed = run
    scenario.check(step, observed, plan)
