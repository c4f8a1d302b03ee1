"""MessageRetentionPeriod: messages really expire (the shortest period SQS allows is 60 s)."""

from __future__ import annotations

import time
from typing import Any

import pytest


@pytest.mark.timeout(120)
def test_messages_older_than_the_retention_period_are_never_delivered(
    sqs: Any, queue_name: str
) -> None:
    url = sqs.create_queue(
        QueueName=queue_name,
        Attributes={"MessageRetentionPeriod": "60", "VisibilityTimeout": "1"},
    )["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="left waiting")
    sqs.send_message(QueueUrl=url, MessageBody="received but never deleted")
    [in_flight] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    assert in_flight["Body"] == "left waiting"

    time.sleep(62)

    assert sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []) == []
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert counts["ApproximateNumberOfMessages"] == "0"
    assert counts["ApproximateNumberOfMessagesNotVisible"] == "0"
    assert counts["ApproximateNumberOfMessagesDelayed"] == "0"
