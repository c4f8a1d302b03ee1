"""The AWS CLI (awscli, unmodified; the `aws` beside the suite's Python): the README's AWS CLI
commands run as written, with only the endpoint changed to the test server's, and the
scenario of scenario.py with one `aws sqs ... --cli-input-json` process per call.

One process per call costs about half a second, so the CLI's scenario is smaller: 3 batches
of 10 (the other SDKs send 20), 4 queues listed 3 a page, 3 messages per FIFO group, 3
purged. AWS CLI v1 sends a blob given in --cli-input-json as the bytes of its text, so its
Binary attribute is printable text. Every step is checked as for the other SDKs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clients import python_driver, scenario
from tests.clients.conftest import MakePlan
from tests.fixtures.cqs_server import CqsProcess

# One aws process per call: the scenario takes about a minute on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(300)

AWS = Path(sys.executable).with_name("aws")
README = Path(__file__).resolve().parents[2] / "README.md"
README_ENDPOINT = "http://127.0.0.1:9324"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
               "AWS_DEFAULT_REGION": "us-east-1"}


def readme_cli_commands() -> tuple[str, list[str]]:
    """The README's AWS CLI block: its `export` line and its commands (continuations joined)."""
    section = README.read_text().split("With the AWS CLI", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the README's AWS CLI paragraph has no sh block"
    lines = block.group(1).replace("\\\n", " ").strip().splitlines()
    assert lines[0].startswith("export ") and all(line.startswith("aws ") for line in lines[1:])
    return lines[0], lines[1:]


def test_the_readmes_aws_cli_commands_work_as_written(cqs_server: CqsProcess) -> None:
    export, commands = readme_cli_commands()
    outputs = []
    # Only `aws` (the one installed with the suite) and the endpoint differ from the README.
    environment = {**os.environ, "PATH": f"{AWS.parent}{os.pathsep}{os.environ['PATH']}"}
    for command in commands:
        done = subprocess.run(["bash", "-euc", f"{export}\n{command.replace(README_ENDPOINT, cqs_server.url)}"],
                              capture_output=True, text=True, env=environment, timeout=60)
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    created, sent, received = outputs
    try:
        assert [c.split()[4] for c in commands] == ["create-queue", "send-message",
                                                    "receive-message"]
        assert created == {"QueueUrl": f"{cqs_server.url}/000000000000/orders"}
        assert sent["MD5OfMessageBody"] == hashlib.md5(b"hello").hexdigest()
        [message] = received["Messages"]
        assert (message["Body"], message["MessageId"]) == ("hello", sent["MessageId"])
    finally:
        python_driver.cli_call(str(AWS), cqs_server.url, {**os.environ, **CREDENTIALS})(
            "DeleteQueue", QueueUrl=created["QueueUrl"])


@pytest.fixture(scope="module")
def run(make_plan: MakePlan) -> tuple[dict[str, Any], scenario.Observations]:
    plan = make_plan(
        batches=3, listed_queues=4, fifo_groups={"g-a": 3, "g-b": 3}, purged_messages=3,
        attributes={**scenario.ATTRIBUTES, "blob": {
            "DataType": "Binary", "BinaryValue": base64.b64encode(b"cqs binary").decode()}})
    call = python_driver.cli_call(str(AWS), plan["endpoint"], {**os.environ, **CREDENTIALS})
    records: list[dict[str, Any]] = []
    python_driver.run(call, plan, records.append)
    return plan, {record["step"]: record for record in records}


@pytest.mark.parametrize("step", scenario.STEPS)
def test_aws_cli_scenario_step(
    run: tuple[dict[str, Any], scenario.Observations], step: str
) -> None:
    plan, observed = run
    scenario.check(step, observed, plan)
