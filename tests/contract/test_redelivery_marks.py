"""The cache tells which deliveries may repeat an earlier one (real redis-server).

A message loaded by a cache fill was in the store before the cache (re)started, so it may
have been delivered before the cache was lost: its first delivery from the cache says so
(`Delivery.reloaded`), which the service counts as a `refill` redelivery. Messages added
by sends are never marked, and the mark goes with the first delivery.
"""

from __future__ import annotations

from dataclasses import replace

from cqs.domain.model import Delivery, QueueIdentity
from cqs.redis_cache.cache import RedisMessageCache
from tests.contract.test_message_cache import (
    RETENTION_MS,
    make_message,
    new_queue,
    nonces,
    now_ms,
    ready_queue,
)


async def deliveries(
    cache: RedisMessageCache, queue: QueueIdentity, now: int, *, visibility_ms: int
) -> list[Delivery]:
    outcome = await cache.receive(queue, 1, visibility_ms, now, RETENTION_MS, nonces(1))
    assert outcome is not None, "the queue should be ready"
    return outcome.deliveries


async def test_a_message_loaded_by_a_fill_is_marked_reloaded_on_its_first_delivery_only(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    now = now_ms()
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.load(queue, "filler", [make_message("stored")], now, {})
    assert await message_cache.finish_fill(queue, "filler", now)
    [first] = await deliveries(message_cache, queue, now, visibility_ms=0)
    assert (first.message.body, first.receive_count, first.reloaded) == ("stored", 1, True)
    [again] = await deliveries(message_cache, queue, now, visibility_ms=0)
    assert (again.receive_count, again.reloaded) == (2, False)


async def test_a_sent_message_is_never_marked_reloaded(message_cache: RedisMessageCache) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("sent")], now)
    [delivery] = await deliveries(message_cache, queue, now, visibility_ms=30_000)
    assert (delivery.message.body, delivery.reloaded) == ("sent", False)


async def test_a_fifo_message_loaded_by_a_fill_is_marked_reloaded(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    queue = queue._replace(name=queue.name + ".fifo")
    now = now_ms()
    fifo_message = replace(make_message("in order"), group_id="g", sequence_number=1)
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.load(queue, "filler", [fifo_message], now, {})
    assert await message_cache.finish_fill(queue, "filler", now)
    outcome = await message_cache.receive_fifo(
        queue, 1, 30_000, now, RETENTION_MS, nonces(1), 0, None
    )
    assert outcome is not None
    [delivery] = outcome.deliveries
    assert (delivery.message.body, delivery.reloaded) == ("in order", True)
