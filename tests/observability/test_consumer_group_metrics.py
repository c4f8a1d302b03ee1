"""Consumer groups (#19) in `/metrics`: every per-queue series of a group carries the label
`queue="<queue>/<group>"`, with the group's own figures (only the copies its filter let
through), beside its queue's series, after a boto3 workload on a real `cqs serve`."""

from __future__ import annotations

import json
import uuid

import pytest

from cqs.client import ExtensionClient
from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.observability.conftest import scrape, sqs_client, wait_for


@pytest.fixture(scope="module")
def server(redis_server: object, start_cqs_server: StartServer) -> CqsProcess:
    return start_cqs_server([redis_server.url])  # type: ignore[attr-defined]


def send(sqs: object, url: str, region: str, count: int) -> None:
    for index in range(count):
        sqs.send_message(  # type: ignore[attr-defined]
            QueueUrl=url, MessageBody=f"{region} {index}",
            MessageAttributes={"region": {"DataType": "String", "StringValue": region}},
        )


def test_each_group_has_its_own_series_labelled_queue_slash_group(server: CqsProcess) -> None:
    sqs = sqs_client(server.url)
    extensions = ExtensionClient(server.url, "us-east-1", "x", "x")
    name = f"metrics-groups-{uuid.uuid4().hex[:10]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    extensions.call("CreateConsumerGroup", {
        "QueueUrl": url, "GroupName": "eu",
        "Attributes": {"FilterPolicy": json.dumps({"region": [{"prefix": "eu-"}]})},
    })
    extensions.call("CreateConsumerGroup", {"QueueUrl": url, "GroupName": "all"})
    send(sqs, url, "eu-west-1", 3)
    send(sqs, url, "us-east-1", 2)
    received = sqs.receive_message(QueueUrl=url + "/eu", MaxNumberOfMessages=1)["Messages"]
    sqs.delete_message(QueueUrl=url + "/eu", ReceiptHandle=received[0]["ReceiptHandle"])
    eu, every = f"{name}/eu", f"{name}/all"

    # Gauges come from a cached read of every queue's figures (names re-listed every 10 s).
    found = wait_for(
        lambda: (s := scrape(server.url)).matching("cqs_queue_visible_messages", queue=eu) and s,
        "the group's gauges in /metrics",
    )
    assert found.value("cqs_queue_visible_messages", queue=eu) == 2
    assert found.value("cqs_queue_visible_messages", queue=every) == 5
    assert found.value("cqs_queue_visible_messages", queue=name) == 5
    assert found.value("cqs_queue_cache_state", queue=eu, state="ready") == 1
    assert found.value("cqs_messages_sent_total", queue=eu) == 3
    assert found.value("cqs_messages_sent_total", queue=every) == 5
    assert found.value("cqs_messages_sent_total", queue=name) == 5
    assert found.value("cqs_messages_received_total", queue=eu) == 1
    assert found.value("cqs_messages_deleted_total", queue=eu) == 1
    assert found.value("cqs_messages_received_total", queue=name) == 0
    assert found.value("cqs_messages_deleted_total", queue=every) == 0
