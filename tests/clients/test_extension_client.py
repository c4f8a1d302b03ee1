"""cqs's own Python client for its extensions (`cqs.client.ExtensionClient`)
against a live server, beside boto3 doing the SQS part.

The one test module here that imports from cqs: the client is what a user installs to call
the extensions, and it imports nothing of the server (botocore and the standard library).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from cqs.client import ExtensionClient, ExtensionError
from tests.fixtures.cqs_server import CqsProcess

REGION = "us-east-1"


@pytest.fixture
def sqs(cqs_server: CqsProcess) -> Any:
    return boto3.client("sqs", endpoint_url=cqs_server.url, region_name=REGION,
                        aws_access_key_id="x", aws_secret_access_key="x")


@pytest.fixture
def client(cqs_server: CqsProcess) -> ExtensionClient:
    return ExtensionClient(cqs_server.url, REGION, "x", "x")


@pytest.fixture
def queue_url(sqs: Any) -> Iterator[str]:
    url = str(sqs.create_queue(
        QueueName="ext-" + uuid.uuid4().hex[:12],
        Attributes={"cqs.ConsumedRetentionSeconds": "3600"},
    )["QueueUrl"])
    yield url
    sqs.delete_queue(QueueUrl=url)


def test_the_client_peeks_every_page_and_replays_a_range(
    sqs: Any, client: ExtensionClient, queue_url: str
) -> None:
    bodies = {f"c-{n}" for n in range(130)}
    for chunk in range(0, 130, 10):
        sqs.send_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(n), "MessageBody": f"c-{chunk + n}",
             "MessageAttributes": {"raw": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}}}
            for n in range(10)])
    peeked = list(client.iter_peek(queue_url, page_size=50))
    assert {m["Body"] for m in peeked} == bodies and len(peeked) == 130
    assert peeked[0]["MessageAttributes"]["raw"]["BinaryValue"] == b"\x00\xff"

    start = time.time() - 1
    received: list[dict[str, Any]] = []
    while len(received) < 130:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(got)])
        received.extend(got)
    assert client.peek_messages(queue_url).get("Messages") is None
    assert client.replay_messages(queue_url, start, time.time() + 1) == 130
    assert {m["Body"] for m in client.iter_peek(queue_url)} == bodies


def test_an_error_answer_raises_with_the_code_and_message(client: ExtensionClient) -> None:
    with pytest.raises(ExtensionError) as refused:
        client.call("NoSuchAction", {})
    assert refused.value.status == 400
    assert refused.value.code == "UnknownOperationException"
    with pytest.raises(ExtensionError) as missing:
        client.peek_messages(client.endpoint_url + "000000000000/no-such-queue")
    assert missing.value.code.endswith("QueueDoesNotExist") and missing.value.message
