"""FIFO state survives the loss of Redis: after the queue's Redis is killed and restarted
empty, deduplication still recognises recent sends, sequence numbers keep growing, order
within a group holds, and a message in flight keeps its group locked.

Real processes only: a redis-server of this test's own, the shared Cassandra node and one
`cqs serve` process over both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from cqs.domain.model import CacheState
from cqs.embedded.redis_server import EmbeddedRedis
from tests.resilience.test_redis_outage import sqs_client, wait_for_ready_cache


def send_until_accepted(sqs: Any, **params: Any) -> dict[str, Any]:
    """SendMessage, retrying ServiceUnavailable (what SDK retries do) for up to 30 s."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return dict(sqs.send_message(**params))
        except ClientError as error:
            if error.response["Error"]["Code"] != "ServiceUnavailable" or (
                time.monotonic() > deadline
            ):
                raise
            time.sleep(0.3)


def receive_bodies(sqs: Any, url: str, seconds: float = 30.0) -> list[dict[str, Any]]:
    """Receive (without deleting) until something arrives or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reply = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                    MessageSystemAttributeNames=["All"])
        if reply.get("Messages"):
            return list(reply["Messages"])
    return []


@pytest.mark.timeout(180)
async def test_fifo_deduplication_order_and_locks_survive_a_redis_restart(
    lone_redis: EmbeddedRedis, start_cqs_server: Callable[[list[str]], Any], tmp_path: Path
) -> None:
    server = await asyncio.to_thread(start_cqs_server, [lone_redis.url])
    sqs = sqs_client(server.url)
    queue = f"fifo-loss-{int(time.time() * 1000)}.fifo"
    url = sqs.create_queue(QueueName=queue, Attributes={"FifoQueue": "true"})["QueueUrl"]

    def send(body: str, group: str, dedup: str) -> dict[str, Any]:
        return send_until_accepted(sqs, QueueUrl=url, MessageBody=body, MessageGroupId=group,
                                   MessageDeduplicationId=dedup)

    first = await asyncio.to_thread(send, "a1", "A", "dedup-a1")
    await asyncio.to_thread(send, "a2", "A", "dedup-a2")
    await asyncio.to_thread(send, "b1", "B", "dedup-b1")
    # a1 goes in flight: group A is locked until it is deleted or its timeout passes
    held = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=60)
    assert [m["Body"] for m in held["Messages"]] == ["a1"]

    lone_redis.kill()
    restarted = EmbeddedRedis(tmp_path / "redis-again", port=lone_redis.port)
    restarted.start()
    try:
        duplicate = await asyncio.to_thread(send, "a1 resent", "A", "dedup-a1")
        assert duplicate["MessageId"] == first["MessageId"]
        assert duplicate["SequenceNumber"] == first["SequenceNumber"]
        later = await asyncio.to_thread(send, "a3", "A", "dedup-a3")
        assert int(later["SequenceNumber"]) > int(first["SequenceNumber"])
        assert await wait_for_ready_cache(sqs, url, restarted.url, queue) is CacheState.READY

        # a1 is still in flight (this process handed it out): only group B is served
        available = await asyncio.to_thread(receive_bodies, sqs, url)
        assert [m["Body"] for m in available] == ["b1"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=held["Messages"][0]["ReceiptHandle"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=available[0]["ReceiptHandle"])
        rest = await asyncio.to_thread(receive_bodies, sqs, url)
        assert [m["Body"] for m in rest] == ["a2", "a3"]
    finally:
        restarted.stop()
