"""Timer messages (#19) sent to a queue with consumer groups (#19): every matching group gets
its copy, due at the same time as the queue's, whether the timer is near (the cache's
delayed set) or far (the durable scheduled store, promoted shortly before it is due); an
entry without a timer in the same batch reaches the groups as any send does. Unmodified
boto3 over both protocols; hours pass on the server's test clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cqs.operations.groups_cli import call
from tests.wire.conftest import wait_for

HOUR = 3600


def entry(name: str, region: str, delay_seconds: int | None) -> dict[str, Any]:
    attributes = {"region": {"DataType": "String", "StringValue": region}}
    if delay_seconds is not None:
        attributes["cqs.DelaySeconds"] = {"DataType": "Number", "StringValue": str(delay_seconds)}
    return {"Id": name, "MessageBody": name, "MessageAttributes": attributes}


def take(sqs: Any, url: str, wanted: int, seconds: float) -> list[str]:
    """The bodies received (and deleted) until `wanted` arrived or `seconds` passed, sorted."""
    bodies: list[str] = []

    def receive() -> bool:
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return len(bodies) >= wanted

    wait_for(receive, seconds)
    return sorted(bodies)


@pytest.mark.timeout(90)
def test_every_matching_group_gets_near_and_far_timer_messages_when_due(
    sqs: Any, make_queue: Any, advance: Any, cqs_endpoint: str
) -> None:
    url = make_queue()
    for name, attributes in (
        ("all", {}),
        ("eu", {"FilterPolicy": json.dumps({"region": [{"prefix": "eu-"}]})}),
    ):
        call(cqs_endpoint, "CreateConsumerGroup",
             {"QueueUrl": url, "GroupName": name, "Attributes": attributes})
    queues = {"queue": url, "all": f"{url}/all", "eu": f"{url}/eu"}
    reply = sqs.send_message_batch(QueueUrl=url, Entries=[
        entry("plain", "eu-west-1", None),
        entry("near", "eu-west-1", 60),
        entry("far-eu", "eu-west-1", 3 * HOUR),
        entry("far-us", "us-east-1", 3 * HOUR),
    ])  # fmt: skip
    assert not reply.get("Failed"), reply["Failed"]

    now = {name: take(sqs, queue, 1, 5) for name, queue in queues.items()}
    assert now == {"queue": ["plain"], "all": ["plain"], "eu": ["plain"]}
    scheduled = {
        name: sqs.get_queue_attributes(
            QueueUrl=queue, AttributeNames=["cqs.ApproximateNumberOfScheduledMessages"]
        )["Attributes"]["cqs.ApproximateNumberOfScheduledMessages"]
        for name, queue in queues.items()
    }
    assert scheduled == {"queue": "2", "all": "2", "eu": "1"}

    advance(61)
    near = {name: take(sqs, queue, 1, 5) for name, queue in queues.items()}
    assert near == {"queue": ["near"], "all": ["near"], "eu": ["near"]}

    advance(3 * HOUR)
    far = {name: take(sqs, queue, 1 if name == "eu" else 2, 15) for name, queue in queues.items()}
    assert far == {
        "queue": ["far-eu", "far-us"], "all": ["far-eu", "far-us"], "eu": ["far-eu"],
    }
    assert all(take(sqs, queue, 1, 2) == [] for queue in queues.values())
