"""A queue's Redis dies mid-run: nothing acknowledged is lost, and the cache comes back.

Real processes only: a redis-server of this test's own (so killing it hurts no other test),
the shared Cassandra node, and a `cqs serve` process over both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from cqs.domain.model import CacheState
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from tests.resilience.conftest import HOME


def sqs_client(endpoint: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}),
    )


def send_numbered(sqs: Any, url: str, start: int, count: int) -> dict[str, str]:
    """Send bodies start..start+count-1; return acknowledged message id -> body."""
    acknowledged = {}
    for number in range(start, start + count):
        reply = sqs.send_message(QueueUrl=url, MessageBody=f"m{number}")
        acknowledged[reply["MessageId"]] = f"m{number}"
    return acknowledged


def drain(sqs: Any, url: str, expected: set[str], seconds: float = 30.0) -> set[str]:
    """Receive and delete until every expected id was seen (or time runs out)."""
    seen: set[str] = set()
    deadline = time.monotonic() + seconds
    while not expected <= seen and time.monotonic() < deadline:
        reply = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                    VisibilityTimeout=5)
        for message in reply.get("Messages", []):
            seen.add(message["MessageId"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return seen


async def wait_for_ready_cache(
    sqs: Any, url: str, redis_url: str, queue_name: str
) -> CacheState:
    """Keep using the queue (fills are started by use) until its cache is READY or 20 s pass."""
    cache = RedisMessageCache([redis_url])
    try:
        deadline = time.monotonic() + 20
        while (state := await cache.state(HOME.queue(queue_name))) is not CacheState.READY:
            if time.monotonic() > deadline:
                break
            await asyncio.to_thread(sqs.get_queue_attributes, QueueUrl=url)
            await asyncio.to_thread(sqs.receive_message, QueueUrl=url, VisibilityTimeout=0)
            await asyncio.sleep(0.2)
        return state
    finally:
        await cache.close()


@pytest.mark.timeout(180)
async def test_messages_survive_a_redis_kill_and_the_cache_refills_after_restart(
    lone_redis: EmbeddedRedis, start_cqs_server: Callable[[list[str]], Any], tmp_path: Path
) -> None:
    server = await asyncio.to_thread(start_cqs_server, [lone_redis.url])
    sqs = sqs_client(server.url)
    queue = "outage-" + str(int(time.time() * 1000))
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]

    before = await asyncio.to_thread(send_numbered, sqs, url, 0, 20)
    assert await wait_for_ready_cache(sqs, url, lone_redis.url, queue) is CacheState.READY

    lone_redis.kill()
    during = await asyncio.to_thread(send_numbered, sqs, url, 20, 20)  # Cassandra still takes them
    assert len(during) == 20

    # Served from Cassandra while Redis is down: receive and delete some of them.
    served_without_redis = await asyncio.to_thread(drain, sqs, url, set(list(before)[:5]), 20.0)
    assert set(list(before)[:5]) <= served_without_redis

    restarted = EmbeddedRedis(tmp_path / "redis-again", port=lone_redis.port)
    restarted.start()
    try:
        after = await asyncio.to_thread(send_numbered, sqs, url, 40, 10)
        everything = {**before, **during, **after}
        remaining = set(everything) - served_without_redis
        seen = await asyncio.to_thread(drain, sqs, url, remaining, 60.0)
        assert remaining <= seen, f"lost: {sorted(remaining - seen)}"
        assert await wait_for_ready_cache(sqs, url, restarted.url, queue) is CacheState.READY
        counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert counts["ApproximateNumberOfMessages"] == "0"
    finally:
        restarted.stop()
