"""MessageRetentionPeriod: messages really expire (the shortest period SQS allows is 60 s).

The server's clock is moved forward (`advance`) instead of sleeping through the period:
what expires is what the server computes from that clock (receives skip messages older
than the period; the expiry trim drops them from the counts).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.wire.conftest import wait_for


def counts(sqs: Any, url: str) -> tuple[str, str, str]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        attributes["ApproximateNumberOfMessages"],
        attributes["ApproximateNumberOfMessagesNotVisible"],
        attributes["ApproximateNumberOfMessagesDelayed"],
    )


@pytest.mark.timeout(30)
def test_messages_older_than_the_retention_period_are_never_delivered(
    sqs: Any, queue_name: str, advance: Any
) -> None:
    url = sqs.create_queue(
        QueueName=queue_name,
        Attributes={"MessageRetentionPeriod": "60", "VisibilityTimeout": "1"},
    )["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="left waiting")
    sqs.send_message(QueueUrl=url, MessageBody="received but never deleted")
    [in_flight] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    assert in_flight["Body"] == "left waiting"

    advance(62)

    assert sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []) == []
    assert wait_for(lambda: counts(sqs, url) == ("0", "0", "0"), 5), counts(sqs, url)


@pytest.mark.timeout(30)
def test_messages_younger_than_the_retention_period_are_still_delivered(
    sqs: Any, queue_name: str, advance: Any
) -> None:
    url = sqs.create_queue(
        QueueName=queue_name, Attributes={"MessageRetentionPeriod": "60"}
    )["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="still fresh")

    advance(45)

    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    assert [m["Body"] for m in received] == ["still fresh"]
    assert counts(sqs, url) == ("0", "1", "0")
