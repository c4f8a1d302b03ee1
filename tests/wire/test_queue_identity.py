"""Queue identity is (account id, region, name): deployments of two accounts or regions that
share one Cassandra keyspace and one Redis keep their queues apart, names and all.

Two real `cqs serve` processes on the same storage, one in the default account and region
and one in another (`--account-id`, `--region`), each create a queue called the same and
use it at once; neither sees the other's queue or messages.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config

from cqs.embedded.redis_server import EmbeddedRedis
from tests.fixtures.cassandra_node import unique_keyspace
from tests.fixtures.cqs_server import StartServer

OTHER_ACCOUNT, OTHER_REGION = "111122223333", "eu-west-1"
MESSAGES = 300


def client(endpoint: str, region: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name=region,
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=30),
    )


def send_all(sqs: Any, url: str, tag: str) -> set[str]:
    bodies = [f"{tag}-{index}" for index in range(MESSAGES)]
    for start in range(0, MESSAGES, 10):
        entries = [{"Id": str(i), "MessageBody": body}
                   for i, body in enumerate(bodies[start:start + 10])]
        assert not sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")
    return set(bodies)


def drain(sqs: Any, url: str) -> list[str]:
    received: list[str] = []
    empty_polls = 0
    while empty_polls < 2:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", [])
        empty_polls = 0 if messages else empty_polls + 1
        for message in messages:
            received.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return received


@pytest.mark.timeout(180)
def test_two_accounts_on_one_storage_keep_same_named_queues_apart(
    redis_server: EmbeddedRedis, start_cqs_server: StartServer
) -> None:
    keyspace = unique_keyspace("cqs_identity")
    home = start_cqs_server([redis_server.url], keyspace=keyspace)
    other = start_cqs_server(
        [redis_server.url], keyspace=keyspace,
        extra_args=["--account-id", OTHER_ACCOUNT, "--region", OTHER_REGION],
    )
    try:
        name = f"orders-{uuid.uuid4().hex[:8]}"
        home_sqs, other_sqs = client(home.url, "us-east-1"), client(other.url, OTHER_REGION)
        home_url = home_sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "40"})[
            "QueueUrl"
        ]
        other_url = other_sqs.create_queue(
            QueueName=name, Attributes={"VisibilityTimeout": "50"}
        )["QueueUrl"]
        assert f"/{OTHER_ACCOUNT}/{name}" in other_url

        # Different attributes for the same name: not a QueueNameExists conflict.
        home_arn = home_sqs.get_queue_attributes(QueueUrl=home_url, AttributeNames=["All"])
        other_arn = other_sqs.get_queue_attributes(QueueUrl=other_url, AttributeNames=["All"])
        assert home_arn["Attributes"]["QueueArn"] == f"arn:aws:sqs:us-east-1:000000000000:{name}"
        assert other_arn["Attributes"]["QueueArn"] == (
            f"arn:aws:sqs:{OTHER_REGION}:{OTHER_ACCOUNT}:{name}"
        )
        assert home_arn["Attributes"]["VisibilityTimeout"] == "40"
        assert other_arn["Attributes"]["VisibilityTimeout"] == "50"

        with ThreadPoolExecutor(2) as pool:
            home_sent = pool.submit(send_all, home_sqs, home_url, "home")
            other_sent = pool.submit(send_all, other_sqs, other_url, "other")
            expected_home, expected_other = home_sent.result(), other_sent.result()
            home_got = pool.submit(drain, home_sqs, home_url)
            other_got = pool.submit(drain, other_sqs, other_url)
            received_home, received_other = home_got.result(), other_got.result()

        assert sorted(received_home) == sorted(expected_home)  # each once, none of the other's
        assert sorted(received_other) == sorted(expected_other)

        # Deleting one account's queue leaves the other's.
        other_sqs.delete_queue(QueueUrl=other_url)
        assert name in " ".join(home_sqs.list_queues(QueueNamePrefix=name).get("QueueUrls", []))
        assert not other_sqs.list_queues(QueueNamePrefix=name).get("QueueUrls")
        home_sqs.send_message(QueueUrl=home_url, MessageBody="still here")
        assert drain(home_sqs, home_url) == ["still here"]
    finally:
        other.stop()
        home.stop()
