"""A cache reset to be refilled keeps what consumers hold, on a real redis-server.

A process whose writes the cache missed (a send while Redis stalled, a delete cut off
from Redis) resets the queue's cache once Redis answers, and the next fill reloads it from
the store. Before, the reset dropped the in-flight set too, so a message a consumer held
came back visible from the refill and was handed out again before its visibility timeout.
Now a standard queue's messages in flight keep their payload, holder's nonce and time
through `reset` and `begin_fill`; the deletes the cache missed are applied by the reset;
and the fill removes at its end those kept messages the store no longer holds. FIFO
queues are reset whole, as before (their group locks come back from the store).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cqs.domain.model import CacheState, DeleteOutcome, Message, QueueIdentity
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.keys import QueueKeys
from tests.contract import test_fifo_cache as fifo
from tests.contract.test_message_cache import (
    RETENTION_MS,
    TIMEOUT_MS,
    bodies,
    make_message,
    nonces,
    now_ms,
    raw_client,
    ready_queue,
    receive,
)


@pytest.fixture(autouse=True)
async def drop_queues_afterwards(message_cache: RedisMessageCache) -> AsyncIterator[None]:
    """Leave nothing due behind: other suites sweep the same Redis and count what is due."""
    yield
    while QUEUES:
        await message_cache.drop(QUEUES.pop())


QUEUES: list[QueueIdentity] = []


async def refill(
    cache: RedisMessageCache,
    queue: QueueIdentity,
    messages: list[Message],
    gone: list[str] | None = None,
) -> list[str]:
    """As a fill does: begin, read what it keeps in flight, load every stored message,
    finish (removing `gone`). Returns the ids kept in flight."""
    assert await cache.begin_fill(queue, "refiller", 10_000)
    kept = await cache.in_flight_ids(queue)
    assert await cache.load(queue, "refiller", messages, now_ms(), {})
    assert await cache.finish_fill(queue, "refiller", now_ms(), {}, gone or [])
    return kept


async def queue_with(cache: RedisMessageCache, messages: list[Message]) -> QueueIdentity:
    """A READY standard queue holding `messages`, dropped after the test."""
    queue = await ready_queue(cache)
    QUEUES.append(queue)
    assert await cache.add(queue, messages, now_ms())
    return queue


async def ids_after_the_timeout(cache: RedisMessageCache, queue: QueueIdentity) -> list[str]:
    """What a receive hands out once every visibility timeout so far has run out."""
    later = await cache.receive(
        queue, 10, TIMEOUT_MS, now_ms() + 2 * TIMEOUT_MS, RETENTION_MS, nonces(10)
    )
    assert later is not None
    return [d.message.message_id for d in later.deliveries]


async def test_a_reset_and_refill_keeps_messages_in_flight_with_their_holders(
    message_cache: RedisMessageCache,
) -> None:
    messages = [make_message(f"m{n}") for n in range(3)]
    queue = await queue_with(message_cache, messages)
    held = await receive(message_cache, queue, now_ms(), max_count=2)
    assert len(held) == 2

    await message_cache.reset(queue)
    assert await message_cache.state(queue) is CacheState.ABSENT
    kept = await refill(message_cache, queue, messages)

    assert sorted(kept) == sorted(d.message.message_id for d in held)
    [third] = [m for m in messages if m.message_id not in kept]
    again = await receive(message_cache, queue, now_ms())
    assert bodies(again) == [third.body]  # the held two are not handed out again
    for delivery in held:  # the holders' handles still delete them
        outcome = await message_cache.delete(
            queue, delivery.message.message_id, delivery.receipt_nonce
        )
        assert outcome is DeleteOutcome.DELETED
    # and they come back after their visibility timeout if not deleted: here, none left
    assert await ids_after_the_timeout(message_cache, queue) == [third.message_id]


async def test_a_reset_applies_the_deletes_the_cache_missed(
    message_cache: RedisMessageCache,
) -> None:
    messages = [make_message(f"m{n}") for n in range(2)]
    queue = await queue_with(message_cache, messages)
    held = await receive(message_cache, queue, now_ms())
    deleted_in_store = held[0].message.message_id

    await message_cache.reset(queue, [deleted_in_store])
    remaining = [m for m in messages if m.message_id != deleted_in_store]
    kept = await refill(message_cache, queue, remaining)

    assert kept == [held[1].message.message_id]
    assert await ids_after_the_timeout(message_cache, queue) == [held[1].message.message_id]


async def test_a_fill_removes_kept_messages_the_store_no_longer_holds(
    message_cache: RedisMessageCache,
) -> None:
    message = make_message("deleted elsewhere")
    queue = await queue_with(message_cache, [message])
    [held] = await receive(message_cache, queue, now_ms())

    await message_cache.reset(queue)  # by a process that did not see the delete
    kept = await refill(message_cache, queue, [], gone=[message.message_id])

    assert kept == [message.message_id]
    assert await message_cache.in_flight_ids(queue) == []
    assert await ids_after_the_timeout(message_cache, queue) == []
    assert held.message.message_id == message.message_id


async def test_a_fifo_queue_is_reset_whole(message_cache: RedisMessageCache) -> None:
    queue = await fifo.ready_fifo_queue(message_cache)
    QUEUES.append(queue)
    [message] = await fifo.send(message_cache, queue, [("grouped", "g1")], now_ms())
    assert await fifo.receive(message_cache, queue, now_ms()) == ["grouped"]
    assert await message_cache.in_flight_ids(queue) == [message.message_id]

    await message_cache.reset(queue)

    assert await message_cache.state(queue) is CacheState.ABSENT
    assert await message_cache.in_flight_ids(queue) == []


async def test_a_delete_while_the_cache_waits_for_its_fill_keeps_the_fill_from_bringing_it_back(
    message_cache: RedisMessageCache,
) -> None:
    """The consumer's delete removes the held message from the reset cache, then from the
    store; a fill that read the store before the store's delete landed must not load it
    visible, and a delivery from the store must not hand it out (issue 26: both were seen
    as early repeats in the multi-host cut)."""
    message = make_message("deleted while reset")
    queue = await queue_with(message_cache, [message])
    [held] = await receive(message_cache, queue, now_ms())
    await message_cache.reset(queue)  # by a process that missed writes

    outcome = await message_cache.delete(queue, message.message_id, held.receipt_nonce)
    assert outcome is DeleteOutcome.DELETED
    assert await message_cache.hide_store_deliveries(
        queue, now_ms(), {message.message_id: now_ms() + TIMEOUT_MS}
    ) == set()
    kept = await refill(message_cache, queue, [message])  # the store's delete not yet read

    assert kept == []
    assert await receive(message_cache, queue, now_ms()) == []
    assert await ids_after_the_timeout(message_cache, queue) == []


async def test_a_delete_just_before_a_reset_keeps_the_fill_from_bringing_it_back(
    message_cache: RedisMessageCache,
) -> None:
    """The consumer's delete reaches the READY cache, another process then resets it, and
    the fill reads the store before the consumer's store delete lands. Before, the cache
    remembered deletes only while not READY, so the fill loaded the message visible and it
    was handed out again about a second after its delete (issue 26, the multi-host cut)."""
    messages = [make_message(f"m{n}") for n in range(2)]
    queue = await queue_with(message_cache, messages)
    held = await receive(message_cache, queue, now_ms(), max_count=2)
    deleted, kept_by_consumer = held
    outcome = await message_cache.delete(
        queue, deleted.message.message_id, deleted.receipt_nonce
    )
    assert outcome is DeleteOutcome.DELETED

    await message_cache.reset(queue)  # by a process that missed writes
    kept = await refill(message_cache, queue, messages)  # the store still held both

    assert kept == [kept_by_consumer.message.message_id]
    assert await message_cache.hide_store_deliveries(
        queue, now_ms(), {deleted.message.message_id: now_ms() + TIMEOUT_MS}
    ) == set()
    assert await receive(message_cache, queue, now_ms()) == []
    assert await ids_after_the_timeout(message_cache, queue) == [
        kept_by_consumer.message.message_id
    ]


async def test_deletes_are_let_go_a_minute_after_the_cache_is_ready(
    message_cache: RedisMessageCache, redis_server: EmbeddedRedis
) -> None:
    """Remembering every delete must not grow without bound: once the cache is READY, a
    delete lets go of those remembered more than 60 s ago."""
    messages = [make_message(f"m{n}") for n in range(2)]
    queue = await queue_with(message_cache, messages)
    first, second = await receive(message_cache, queue, now_ms(), max_count=2)
    recent = QueueKeys(queue).recent_deletes
    async with raw_client(redis_server.url) as raw:
        await message_cache.delete(queue, first.message.message_id, first.receipt_nonce)
        assert await raw.zrange(recent, 0, -1) == [first.message.message_id]
        # as if that delete had been 61 s ago
        await raw.zadd(recent, {first.message.message_id: now_ms() - 61_000})

        await message_cache.delete(queue, second.message.message_id, second.receipt_nonce)

        assert await raw.zrange(recent, 0, -1) == [second.message.message_id]


async def test_a_senders_add_that_reaches_redis_after_the_delete_does_not_bring_it_back(
    message_cache: RedisMessageCache,
) -> None:
    """A sender cut off from Redis times out on its add and marks the cache stale; the
    kernel still delivers the command once the link heals, after the refilled cache handed
    the message out and its consumer deleted it. Before, that late add cached the message
    again, and it was delivered a second time about a second after its delete (issue 26,
    the multi-host cut: two early repeats in each run)."""
    message = make_message("sent while cut off")
    queue = await queue_with(message_cache, [])
    await message_cache.reset(queue)  # the sender's stale mark reaches Redis
    await refill(message_cache, queue, [message])
    [delivery] = await receive(message_cache, queue, now_ms())
    outcome = await message_cache.delete(queue, message.message_id, delivery.receipt_nonce)
    assert outcome is DeleteOutcome.DELETED

    assert await message_cache.add(queue, [message], now_ms())  # the late add lands

    assert await receive(message_cache, queue, now_ms()) == []
    assert await ids_after_the_timeout(message_cache, queue) == []
