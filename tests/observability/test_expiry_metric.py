"""Expired messages are counted: a real server, a queue with the shortest retention SQS
allows (60 s), the expiry trim run every second instead of every 30, and the server's
test clock moved past the retention period instead of sleeping through it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.observability.conftest import scrape, sqs_client, wait_for


@pytest.mark.timeout(60)
def test_messages_past_their_retention_are_counted_as_expired_in_the_scrape(
    lone_redis: Any, start_cqs_server: StartServer
) -> None:
    # A Redis of its own: once advanced, this server's revisibility sweep would return other
    # servers' in-flight messages early on a shared one.
    server = start_cqs_server(
        [lone_redis.url], extra_args=["--expiry-trim-seconds", "1"], test_clock=True
    )
    try:
        observe_expiry(server)
    finally:
        server.stop()  # before its Redis stops with the test


def observe_expiry(server: CqsProcess) -> None:
    sqs = sqs_client(server.url)
    queue = "expiring-" + uuid.uuid4().hex[:8]
    url = sqs.create_queue(QueueName=queue, Attributes={"MessageRetentionPeriod": "60"})[
        "QueueUrl"
    ]
    for number in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"short-lived {number}")
    wait_for(
        lambda: scrape(server.url).value("cqs_queue_visible_messages", queue=queue) == 3,
        "the new queue's three visible messages in the scrape", timeout=20,
    )

    server.advance_clock(61)

    expired = wait_for(
        lambda: scrape(server.url).value("cqs_messages_expired_total", queue=queue) or None,
        "the expiry trim to count the messages", timeout=20,
    )
    assert expired == 3
    wait_for(
        lambda: scrape(server.url).value("cqs_queue_visible_messages", queue=queue) == 0,
        "the visible gauge to drop to zero", timeout=10,
    )
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []
