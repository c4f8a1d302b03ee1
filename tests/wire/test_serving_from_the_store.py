"""The message tables end to end through a Redis loss: real `cqs serve` processes.

300 messages are sent; 100 are received and deleted through the first server; its Redis is
then emptied, so the next server serves the queue from what Cassandra holds (sampling the
store, then a cache fill): the other 200 must come back, each once, and none of the deleted
100. Once those are deleted too and Redis is emptied again, Cassandra must hold nothing.
Every message is accounted for by id.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import boto3
import pytest
from redis import Redis

MESSAGES = 300
DELETED_FIRST = 100
VISIBILITY_SECONDS = 120  # longer than the test: any repeat delivery is a duplicate


def client(endpoint: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="x",
    )


def receive_and_delete(sqs: Any, url: str, wanted: int, seconds: float) -> list[str]:
    """Receive (and delete) until `wanted` messages came or `seconds` passed; their ids."""
    received: list[str] = []
    deadline = time.monotonic() + seconds
    while len(received) < wanted and time.monotonic() < deadline:
        batch = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=min(10, wanted - len(received)),
            WaitTimeSeconds=1,
        ).get("Messages", [])
        if not batch:
            continue
        received += [m["MessageId"] for m in batch]
        result = sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch)
        ])
        assert not result.get("Failed"), result["Failed"]
    return received


def visible_messages(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


@pytest.mark.timeout(240)
def test_the_message_tables_keep_every_message_through_a_redis_loss(
    lone_redis: Any, start_cqs_server: Any
) -> None:
    keyspace = "t_store_" + uuid.uuid4().hex[:10]
    redis = Redis.from_url(lone_redis.url)

    def serve() -> Any:
        return start_cqs_server([lone_redis.url], keyspace=keyspace)

    first = serve()
    sqs = client(first.url)
    name = "from-store-" + uuid.uuid4().hex[:8]
    url = sqs.create_queue(
        QueueName=name, Attributes={"VisibilityTimeout": str(VISIBILITY_SECONDS)}
    )["QueueUrl"]
    sent: list[str] = []
    for start in range(0, MESSAGES, 10):
        result = sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": str(n), "MessageBody": f"message {start + n}"} for n in range(10)
        ])
        assert not result.get("Failed"), result["Failed"]
        sent += [entry["MessageId"] for entry in result["Successful"]]
    assert len(set(sent)) == MESSAGES

    deleted_first = receive_and_delete(sqs, url, DELETED_FIRST, 60)
    assert len(deleted_first) == DELETED_FIRST
    assert len(set(deleted_first)) == DELETED_FIRST
    assert set(deleted_first) <= set(sent)
    first.stop()
    redis.flushall()  # Redis lost: what is left is what Cassandra holds

    second = serve()
    sqs = client(second.url)
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    assert visible_messages(sqs, url) == MESSAGES - DELETED_FIRST
    rest = receive_and_delete(sqs, url, MESSAGES - DELETED_FIRST, 120)
    assert len(rest) == len(set(rest)), "a message was delivered twice"
    assert set(rest) == set(sent) - set(deleted_first), (
        f"missing {len(set(sent) - set(deleted_first) - set(rest))}, "
        f"deleted ones back {len(set(rest) & set(deleted_first))}"
    )
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []
    second.stop()
    redis.flushall()

    third = serve()
    sqs = client(third.url)
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    assert visible_messages(sqs, url) == 0
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2).get("Messages", []) == []
    third.stop()
