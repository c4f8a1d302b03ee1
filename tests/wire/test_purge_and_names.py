"""PurgeQueueInProgress, QueueDeletedRecently and the stored-only encryption attributes,
over boto3 (JSON 1.0) and the query protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from cqs.embedded.redis_server import EmbeddedRedis
from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.wire.conftest import (
    REGION,
    Speaker,
    SqsError,
    error_code,
    http_status,
    queue_path,
    send_query,
    unique_name,
)

COOLDOWN_SECONDS = 60  # as in SQS; it passes on the server's test clock


def test_a_second_purge_within_sixty_seconds_is_purge_queue_in_progress(
    sqs: Any, queue_url: str
) -> None:
    sqs.purge_queue(QueueUrl=queue_url)

    with pytest.raises(ClientError) as again:
        sqs.purge_queue(QueueUrl=queue_url)

    assert error_code(again.value) == "AWS.SimpleQueueService.PurgeQueueInProgress"
    assert http_status(again.value) == 403
    assert again.value.response["Error"]["Message"] == (
        f"Only one PurgeQueue operation on {queue_url.rsplit('/', 1)[-1]} is allowed every"
        " 60 seconds."
    )


def test_a_queue_may_be_purged_again_sixty_seconds_later(
    sqs: Any, queue_url: str, advance: Callable[[float], None]
) -> None:
    sqs.purge_queue(QueueUrl=queue_url)
    advance(55)
    with pytest.raises(ClientError) as too_soon:
        sqs.purge_queue(QueueUrl=queue_url)
    assert error_code(too_soon.value) == "AWS.SimpleQueueService.PurgeQueueInProgress"

    advance(6)
    sqs.send_message(QueueUrl=queue_url, MessageBody="purged by the second purge")
    sqs.purge_queue(QueueUrl=queue_url)
    assert sqs.receive_message(QueueUrl=queue_url).get("Messages", []) == []


def test_a_recreated_queue_may_be_purged_at_once(sqs: Any, queue_name: str) -> None:
    url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    sqs.purge_queue(QueueUrl=url)
    sqs.delete_queue(QueueUrl=url)
    url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]

    sqs.purge_queue(QueueUrl=url)
    sqs.delete_queue(QueueUrl=url)


def test_by_default_a_deleted_name_can_be_used_again_at_once(sqs: Any, queue_name: str) -> None:
    url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    sqs.delete_queue(QueueUrl=url)

    assert sqs.create_queue(QueueName=queue_name)["QueueUrl"] == url
    sqs.delete_queue(QueueUrl=url)


@pytest.fixture(scope="module")
def cooldown_server(
    tmp_path_factory: pytest.TempPathFactory, start_cqs_server: StartServer
) -> Iterator[CqsProcess]:
    """A server with the cooldown on the test clock, over a Redis of its own (as `clock_server`:
    a clock moved ahead must not sweep other servers' queues)."""
    redis = EmbeddedRedis(tmp_path_factory.mktemp("cooldown-redis"))
    redis.start()
    try:
        server = start_cqs_server(
            [redis.url], test_clock=True,
            extra_args=["--queue-deleted-recently-seconds", str(COOLDOWN_SECONDS)],
        )
        yield server
        server.stop()
    finally:
        redis.stop()


@pytest.fixture(scope="module")
def cooldown_endpoint(cooldown_server: CqsProcess) -> str:
    return cooldown_server.url


def test_a_name_deleted_within_the_cooldown_is_queue_deleted_recently(
    cooldown_server: CqsProcess, cooldown_endpoint: str
) -> None:
    client = boto3.client(
        "sqs", endpoint_url=cooldown_endpoint, region_name=REGION, aws_access_key_id="x",
        aws_secret_access_key="x", config=Config(retries={"total_max_attempts": 1}),
    )
    name = unique_name("gone-")
    client.delete_queue(QueueUrl=client.create_queue(QueueName=name)["QueueUrl"])

    with pytest.raises(ClientError) as too_soon:
        client.create_queue(QueueName=name)

    assert error_code(too_soon.value) == "AWS.SimpleQueueService.QueueDeletedRecently"
    assert http_status(too_soon.value) == 400
    cooldown_server.advance_clock(COOLDOWN_SECONDS - 5)
    with pytest.raises(ClientError) as still:
        client.create_queue(QueueName=name)
    assert error_code(still.value) == "AWS.SimpleQueueService.QueueDeletedRecently"
    cooldown_server.advance_clock(6)
    assert client.create_queue(QueueName=name)["QueueUrl"].endswith("/" + name)


def test_queue_deleted_recently_over_the_query_protocol(cooldown_endpoint: str) -> None:
    name = unique_name("gone-")
    created = send_query(cooldown_endpoint, "CreateQueue", {"QueueName": name})
    url = created.text("CreateQueueResult/QueueUrl") or ""
    send_query(cooldown_endpoint, "DeleteQueue", {}, path=queue_path(url))

    again = send_query(cooldown_endpoint, "CreateQueue", {"QueueName": name})

    assert again.status == 400
    assert again.error_code == "AWS.SimpleQueueService.QueueDeletedRecently"


def test_encryption_attributes_are_stored_and_returned(speaker: Speaker, sqs: Any) -> None:
    url = speaker.create_queue(unique_name("kms-"), {
        "KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "600",
    })
    try:
        speaker.set_queue_attributes(url, {"KmsDataKeyReusePeriodSeconds": "900"})
        other = speaker.create_queue(unique_name("sse-"), {"SqsManagedSseEnabled": "true"})
        try:
            assert speaker.queue_attributes(
                url, ["KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds"]
            ) == {"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "900"}
            assert speaker.queue_attributes(other, ["SqsManagedSseEnabled"]) == {
                "SqsManagedSseEnabled": "true"}
            with pytest.raises(SqsError) as bad:
                speaker.set_queue_attributes(url, {"KmsDataKeyReusePeriodSeconds": "30"})
            assert bad.value.code == "InvalidAttributeValue"
        finally:
            sqs.delete_queue(QueueUrl=other)
    finally:
        sqs.delete_queue(QueueUrl=url)


def test_a_fifo_send_repeating_a_purged_deduplication_id_is_delivered(sqs: Any) -> None:
    """PurgeQueue forgets the deduplication ids of the purged messages, as in SQS: the
    second send is a new message, not the purged one again, and it is delivered."""
    url = sqs.create_queue(
        QueueName=unique_name("purge-dedup-") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    first = sqs.send_message(
        QueueUrl=url, MessageBody="purged", MessageGroupId="g", MessageDeduplicationId="d"
    )
    sqs.purge_queue(QueueUrl=url)

    second = sqs.send_message(
        QueueUrl=url, MessageBody="after the purge", MessageGroupId="g",
        MessageDeduplicationId="d",
    )
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2)

    assert second["MessageId"] != first["MessageId"]
    assert [(m["MessageId"], m["Body"]) for m in received.get("Messages", [])] == [
        (second["MessageId"], "after the purge")
    ]
