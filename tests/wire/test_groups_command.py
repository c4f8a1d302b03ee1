"""The `cqs groups` command against a running server, as a user runs it: it creates, lists
and deletes consumer groups through the JSON extension actions; boto3 then consumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.wire.conftest import unique_name


@pytest.fixture
def queue(sqs: Any) -> Iterator[str]:
    url = str(sqs.create_queue(QueueName=unique_name("cg-cli-"))["QueueUrl"])
    yield url
    sqs.delete_queue(QueueUrl=url)



def cqs_groups(*args: str) -> subprocess.CompletedProcess[str]:
    """The `cqs groups` command as a user runs it (no AWS settings: dummy credentials)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CQS_"))}
    return subprocess.run(
        [sys.executable, "-m", "cqs", "groups", *args], capture_output=True, text=True,
        timeout=60, env=environment, check=False,
    )


@pytest.mark.json_only
def test_the_groups_command_creates_lists_and_deletes(sqs: Any, queue: str) -> None:
    """JSON only: the command speaks the JSON extension actions; boto3 consumes."""
    policy = json.dumps({"kind": ["order"]})
    created = cqs_groups("create", "--queue-url", queue, "--name", "orders",
                         "--filter-policy", policy, "--visibility-timeout", "7",
                         "--consumed-retention-seconds", "3600")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["QueueUrl"] == f"{queue}/orders"
    listed = cqs_groups("list", "--queue-url", queue)
    assert listed.returncode == 0, listed.stderr
    [group] = json.loads(listed.stdout)["ConsumerGroups"]
    assert (group["GroupName"], group["Attributes"]["FilterPolicy"],
            group["Attributes"]["VisibilityTimeout"],
            group["Attributes"]["cqs.ConsumedRetentionSeconds"]) == ("orders", policy, "7", "3600")
    for kind in ("test", "order"):
        sqs.send_message(QueueUrl=queue, MessageBody=kind, MessageAttributes={
            "kind": {"DataType": "String", "StringValue": kind}})
    got = sqs.receive_message(QueueUrl=f"{queue}/orders", WaitTimeSeconds=5,
                              MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in got] == ["order"]
    sqs.delete_message(QueueUrl=f"{queue}/orders", ReceiptHandle=got[0]["ReceiptHandle"])
    changed = cqs_groups("set-filter", "--queue-url", queue, "--name", "orders",
                         "--filter-policy", json.dumps({"kind": ["test"]}))
    assert changed.returncode == 0, changed.stderr
    assert json.loads(json.loads(changed.stdout)["Attributes"]["FilterPolicy"]) == {
        "kind": ["test"]}
    for kind in ("test", "order"):
        sqs.send_message(QueueUrl=queue, MessageBody=f"{kind} 2", MessageAttributes={
            "kind": {"DataType": "String", "StringValue": kind}})
    got = sqs.receive_message(QueueUrl=f"{queue}/orders", WaitTimeSeconds=5,
                              MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in got] == ["test 2"]
    # The group's queue attributes are set on its URL, as on any queue.
    sqs.set_queue_attributes(QueueUrl=f"{queue}/orders", Attributes={"VisibilityTimeout": "9"})
    [group] = json.loads(cqs_groups("list", "--queue-url", queue).stdout)["ConsumerGroups"]
    assert group["Attributes"]["VisibilityTimeout"] == "9"
    refused = cqs_groups("create", "--queue-url", queue, "--name", "bad",
                         "--filter-policy", "{")
    assert refused.returncode == 1
    assert "InvalidParameterValue (400): Invalid parameter: FilterPolicy" in refused.stderr
    deleted = cqs_groups("delete", "--queue-url", queue, "--name", "orders")
    assert (deleted.returncode, deleted.stdout) == (0, "")
    assert json.loads(cqs_groups("list", "--queue-url", queue).stdout) == {"ConsumerGroups": []}
