"""RedisMessageCache on a real six-node Redis Cluster: what changes from one server.

Each queue's scripts run in the queue's slot, whichever primary owns it; what one server
shares between queues (`cqs:due`, the deferred-delete directory, the arrivals channel) is
per queue here: long polls hear arrivals over the queue's shard channel, the sweep reads
the queues this process listens on, deferred store deletes are found through a directory
written after the script.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.crc import key_slot

from cqs.domain.model import DeleteOutcome, QueueIdentity
from cqs.redis_cache.cache import RedisMessageCache
from tests.contract.test_message_cache import RETENTION_MS, make_message, nonces, now_ms
from tests.fixtures.redis_cluster import LocalRedisCluster

pytestmark = pytest.mark.timeout(90)


def queue_in_slot_range(low: int, high: int) -> QueueIdentity:
    while True:
        queue = QueueIdentity("000000000000", "us-east-1", f"q-{uuid.uuid4().hex}")
        if low <= key_slot(queue.key.encode()) <= high:
            return queue


@pytest.fixture
async def cluster_cache(redis_cluster: LocalRedisCluster) -> AsyncIterator[RedisMessageCache]:
    cache = RedisMessageCache(redis_cluster.urls)
    try:
        yield cache
    finally:
        await cache.close()


async def ready(cache: RedisMessageCache, queue: QueueIdentity) -> QueueIdentity:
    assert await cache.begin_fill(queue, "filler", 10_000)
    assert await cache.finish_fill(queue, "filler")
    return queue


async def test_queues_on_every_primary_take_sends_receives_and_deletes(
    redis_cluster: LocalRedisCluster, cluster_cache: RedisMessageCache
) -> None:
    """Three queues, one in each primary's slot range (create assigns 0-5460, 5461-10922,
    10923-16383): every script runs where its queue lives."""
    queues = [queue_in_slot_range(0, 5000), queue_in_slot_range(6000, 10000),
              queue_in_slot_range(11000, 16000)]  # fmt: skip
    owners = {redis_cluster.node_of_slot(key_slot(q.key.encode())).port for q in queues}
    assert len(owners) == 3
    for queue in queues:
        await ready(cluster_cache, queue)
        message = make_message(f"on {queue.name}")
        assert await cluster_cache.add(queue, [message], now_ms())
        outcome = await cluster_cache.receive(queue, 10, 30_000, now_ms(), RETENTION_MS, nonces(10))
        assert outcome is not None
        [delivery] = outcome.deliveries
        assert delivery.message.message_id == message.message_id
        [deleted] = await cluster_cache.delete_many(
            queue, [(message.message_id, delivery.receipt_nonce)]
        )
        assert deleted is DeleteOutcome.DELETED
        counts = await cluster_cache.counts(queue, now_ms())
        assert (counts.visible, counts.in_flight) == (0, 0)


async def test_a_listening_long_poll_hears_a_send_through_another_process(
    redis_cluster: LocalRedisCluster, cluster_cache: RedisMessageCache
) -> None:
    queue = await ready(cluster_cache, queue_in_slot_range(0, 16383))
    heard: asyncio.Queue[QueueIdentity] = asyncio.Queue()

    async def follow() -> None:
        async for arrived in cluster_cache.arrivals():
            heard.put_nowait(arrived)

    following = asyncio.create_task(follow())
    sender = RedisMessageCache(redis_cluster.urls)
    try:
        await asyncio.sleep(0)  # the feed opens before the long poll listens
        await cluster_cache.listen(queue, 10_000)
        assert await sender.add(queue, [make_message()], now_ms())
        async with asyncio.timeout(5):
            assert await heard.get() == queue
    finally:
        following.cancel()
        await sender.close()


async def test_the_sweep_returns_due_messages_of_the_queues_this_process_listens_on(
    cluster_cache: RedisMessageCache,
) -> None:
    listened = await ready(cluster_cache, queue_in_slot_range(0, 16383))
    other = await ready(cluster_cache, queue_in_slot_range(0, 16383))
    for queue in (listened, other):
        assert await cluster_cache.add(queue, [make_message()], now_ms())
        outcome = await cluster_cache.receive(queue, 1, 1, now_ms(), RETENTION_MS, nonces(1))
        assert outcome is not None and len(outcome.deliveries) == 1
    await cluster_cache.listen(listened, 10_000)
    released = await cluster_cache.release_due(now_ms() + 5_000, 100, "sweeper", 1_000)
    assert released == [listened]
    counts = await cluster_cache.counts(listened, now_ms())
    assert (counts.visible, counts.in_flight) == (1, 0)


async def test_deferred_store_deletes_are_found_across_slots_and_forgotten(
    cluster_cache: RedisMessageCache,
) -> None:
    queues = [await ready(cluster_cache, queue_in_slot_range(low, low + 4000))
              for low in (0, 6000, 12000)]  # fmt: skip
    for index, queue in enumerate(queues):
        await cluster_cache.defer_store_delete(queue, f"m-{index}")
    found = await cluster_cache.deferred_store_deletes(100)
    for index, queue in enumerate(queues):
        assert found.get(queue) == [f"m-{index}"]
        await cluster_cache.forget_store_deletes(queue, [f"m-{index}"])
    after = await cluster_cache.deferred_store_deletes(100)
    assert not set(after) & set(queues)
    again = await cluster_cache.deferred_store_deletes(100)  # the directory let them go
    assert not set(again) & set(queues)
