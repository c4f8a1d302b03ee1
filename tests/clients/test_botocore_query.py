"""The scenario through botocore 1.34.89, the last botocore whose SQS model speaks the query
protocol (form-encoded requests, XML answers; 1.34.90 moved SQS to AWS JSON 1.0).

It is installed apart from the suite's own botocore, into tests/clients/.botocore-old by
`./scripts/bootstrap --test`, and runs python_driver.py in a subprocess with that directory
first on PYTHONPATH. Each step of scenario.py is its own test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clients import scenario
from tests.clients.conftest import MakePlan

QUERY_BOTOCORE_VERSION = "1.34.89"
HERE = Path(__file__).resolve().parent
TARGET = HERE / ".botocore-old"
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def run(make_plan: MakePlan) -> tuple[dict[str, Any], scenario.Observations]:
    assert (TARGET / "botocore").is_dir(), "run ./scripts/bootstrap --test (installs it)"
    plan = make_plan()
    environment = {**os.environ, "PYTHONPATH": f"{TARGET}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.clients.python_driver", "botocore", json.dumps(plan)],
        capture_output=True, text=True, env=environment, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return plan, scenario.parse(done.stdout.splitlines())


def test_the_old_botocore_speaks_the_query_protocol(
    run: tuple[dict[str, Any], scenario.Observations],
) -> None:
    _, observed = run
    assert observed["client"] == {"step": "client", "version": QUERY_BOTOCORE_VERSION,
                                  "protocol": "query"}


@pytest.mark.parametrize("step", scenario.STEPS)
def test_botocore_query_scenario_step(
    run: tuple[dict[str, Any], scenario.Observations], step: str
) -> None:
    plan, observed = run
    scenario.check(step, observed, plan)
