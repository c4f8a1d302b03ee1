"""Adding a Redis server: only queues whose ring owner changed move, and they lose nothing.

The documented procedure (docs/operations.md): give every API process the new Redis list
(rolling restart; old and new processes overlap for a while), then run `cqs rebalance
--previous-redis-urls <old list>` once. Real processes: two redis-servers of this test's
own, the shared Cassandra node, two `cqs serve` processes over one keyspace.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from cqs.domain.model import CacheState
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.ring import HashRing
from tests.fixtures.cqs_server import StartServer
from tests.resilience.conftest import HOME


def client(endpoint: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}),
    )


def drain(sqs: Any, url: str, seconds: float = 20.0) -> list[str]:
    bodies: list[str] = []
    deadline = time.monotonic() + seconds
    quiet = 0
    while time.monotonic() < deadline and quiet < 2:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, VisibilityTimeout=30
        ).get("Messages", [])
        quiet = 0 if messages else quiet + 1
        for message in messages:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


@pytest.fixture
def two_redis(tmp_path: Path) -> Any:
    servers = [EmbeddedRedis(tmp_path / f"redis{i}") for i in range(2)]
    for server in servers:
        server.start()
    yield servers
    for server in servers:
        server.stop()


@pytest.mark.timeout(240)
async def test_adding_a_redis_server_moves_only_the_queues_whose_owner_changed_and_loses_nothing(
    two_redis: list[EmbeddedRedis], start_cqs_server: StartServer
) -> None:
    first, second = (server.url for server in two_redis)
    keyspace = "ring_" + uuid.uuid4().hex[:10]
    old = await asyncio.to_thread(start_cqs_server, [first], keyspace)
    old_sqs = client(old.url)
    names = [f"ring-{i}-{uuid.uuid4().hex[:6]}" for i in range(12)]
    expected: dict[str, set[str]] = {}
    for name in names:
        url = old_sqs.create_queue(QueueName=name)["QueueUrl"]
        for n in range(3):
            old_sqs.send_message(QueueUrl=url, MessageBody=f"{name}/old/{n}")
        [taken] = old_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
        old_sqs.delete_message(QueueUrl=url, ReceiptHandle=taken["ReceiptHandle"])
        expected[name] = {f"{name}/old/{n}" for n in range(3)} - {taken["Body"]}

    # Rolling restart: a process on the new list runs beside the old one for a while.
    new = await asyncio.to_thread(start_cqs_server, [first, second], keyspace)
    new_sqs = client(new.url)
    for name in names:
        old_url = old_sqs.get_queue_url(QueueName=name)["QueueUrl"]
        new_url = new_sqs.get_queue_url(QueueName=name)["QueueUrl"]
        old_sqs.send_message(QueueUrl=old_url, MessageBody=f"{name}/overlap-old")
        new_sqs.send_message(QueueUrl=new_url, MessageBody=f"{name}/overlap-new")
        expected[name] |= {f"{name}/overlap-old", f"{name}/overlap-new"}
    old.stop()

    rebalance = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "cqs", "rebalance", "--redis-urls", f"{first},{second}",
         "--previous-redis-urls", first, "--cassandra-hosts", new.cassandra_host,
         "--cassandra-keyspace", keyspace],
        capture_output=True, text=True, timeout=60,
    )
    assert rebalance.returncode == 0, rebalance.stderr
    before, after = HashRing([first]), HashRing([first, second])
    keys = [HOME.queue(name).key for name in names]
    should_move = sorted(k for k in keys if before.node_for(k) != after.node_for(k))
    assert 0 < len(should_move) < len(names)
    assert rebalance.stdout.split(": ", 1)[1].split() == should_move

    for name in names:
        url = new_sqs.get_queue_url(QueueName=name)["QueueUrl"]
        received = await asyncio.to_thread(drain, new_sqs, url)
        assert set(received) == expected[name], name

    # The queues that stayed kept their cache; the moved ones were refilled on the new owner.
    cache = RedisMessageCache([first, second])
    try:
        for name in names:
            assert await cache.state(HOME.queue(name)) is CacheState.READY
    finally:
        await cache.close()
