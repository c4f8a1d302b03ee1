"""The scenario through current boto3 (AWS JSON 1.0), in the test process.

Each step of scenario.py is its own test; the SDK runs them all once per module.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.clients import python_driver, scenario
from tests.clients.conftest import MakePlan


@pytest.fixture(scope="module")
def run(make_plan: MakePlan) -> tuple[dict[str, Any], scenario.Observations]:
    plan = make_plan()
    client = boto3.client(
        "sqs", endpoint_url=plan["endpoint"], region_name=plan["region"],
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40))
    assert client.meta.service_model.protocol == "json"
    records: list[dict[str, Any]] = []
    python_driver.run(python_driver.botocore_call(client), plan, records.append)
    return plan, {record["step"]: record for record in records}


@pytest.mark.parametrize("step", scenario.STEPS)
def test_boto3_scenario_step(run: tuple[dict[str, Any], scenario.Observations], step: str) -> None:
    plan, observed = run
    scenario.check(step, observed, plan)
