"""Contract of the MessageCache port, run against RedisMessageCache on a real redis-server."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest
from redis.asyncio import Redis

from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import (
    CacheState,
    DeleteOutcome,
    Delivery,
    Message,
    MessageAttributeValue,
    MessageCounts,
    QueueIdentity,
    VisibilityOutcome,
)
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.ports import MessageCache
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.keys import (
    ARRIVALS_CHANNEL,
    DUE_KEY,
    STORE_DELETE_QUEUES_KEY,
    SWEEPER_KEY,
    QueueKeys,
)

pytestmark = pytest.mark.timeout(60)

TIMEOUT_MS = 30_000
RETENTION_MS = 4 * 24 * 3600 * 1000
# every test on the shared server sweeps as the same process, so none waits for a lease
SWEEPER = "test-sweeper"
SWEEP_LEASE_MS = 60_000


def now_ms() -> int:
    return int(time.time() * 1000)


def new_queue() -> QueueIdentity:
    return QueueIdentity("000000000000", "us-east-1", f"q-{uuid.uuid4().hex}")


def make_message(body: str = "hello", *, sent_ms: int | None = None, delay_ms: int = 0) -> Message:
    # by default sent a second ago, so it is deliverable at any `now` a test took before
    sent = now_ms() - 1000 if sent_ms is None else sent_ms
    return Message(
        message_id=str(uuid.uuid1()),
        body=body,
        md5_of_body=hashlib.md5(body.encode()).hexdigest(),
        sent_timestamp_ms=sent,
        visible_at_ms=sent + delay_ms,
        sender_id="AIDATEST",
        message_attributes={"kind": MessageAttributeValue("String", string_value="test")},
        md5_of_message_attributes="0" * 32,
    )


def nonces(count: int) -> list[str]:
    return [uuid.uuid4().hex for _ in range(count)]


async def ready_queue(cache: MessageCache) -> QueueIdentity:
    queue = new_queue()
    assert await cache.begin_fill(queue, "filler", 10_000)
    assert await cache.finish_fill(queue, "filler")
    return queue


async def receive(
    cache: MessageCache,
    queue: QueueIdentity,
    at_ms: int,
    *,
    max_count: int = 10,
    timeout_ms: int = TIMEOUT_MS,
    retention_ms: int = RETENTION_MS,
) -> list[Delivery]:
    outcome = await cache.receive(queue, max_count, timeout_ms, at_ms, retention_ms, nonces(max_count))
    assert outcome is not None, "the queue should be ready"
    return outcome.deliveries


async def sweep(cache: MessageCache, at_ms: int, limit: int = 100) -> list[QueueIdentity]:
    return await cache.release_due(at_ms, limit, SWEEPER, SWEEP_LEASE_MS)


def bodies(deliveries: Sequence[Delivery]) -> list[str]:
    return [delivery.message.body for delivery in deliveries]


async def wait_until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll `condition` (for things that happen in the background) for up to 10 seconds."""
    for _ in range(200):
        if await condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting until {what}")


@contextlib.asynccontextmanager
async def raw_client(url: str) -> AsyncIterator[Redis]:
    client: Redis = Redis.from_url(url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def raw_redis(redis_server: EmbeddedRedis) -> AsyncIterator[Redis]:
    async with raw_client(redis_server.url) as client:
        yield client


@pytest.fixture
async def lone_raw_redis(lone_redis: EmbeddedRedis) -> AsyncIterator[Redis]:
    async with raw_client(lone_redis.url) as client:
        yield client


# --- state and fill ---------------------------------------------------------------------


async def test_a_queue_nobody_filled_is_absent(message_cache: RedisMessageCache) -> None:
    assert await message_cache.state(new_queue()) is CacheState.ABSENT


async def test_sends_to_an_absent_queue_are_refused_and_add_nothing(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    assert not await message_cache.add(queue, [make_message()], now_ms())
    assert await message_cache.counts(queue, now_ms()) == MessageCounts(0, 0, 0)


async def test_receive_returns_none_unless_the_queue_is_ready(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    assert await message_cache.receive(queue, 1, TIMEOUT_MS, now_ms(), RETENTION_MS, ["n"]) is None
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.add(queue, [make_message()], now_ms())
    assert await message_cache.receive(queue, 1, TIMEOUT_MS, now_ms(), RETENTION_MS, ["n"]) is None


async def test_fill_lease_goes_from_absent_to_filling_to_ready(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    assert await message_cache.begin_fill(queue, "first", 10_000)
    assert await message_cache.state(queue) is CacheState.FILLING
    assert await message_cache.renew_fill(queue, "first", 10_000)
    assert await message_cache.finish_fill(queue, "first")
    assert await message_cache.state(queue) is CacheState.READY


async def test_a_second_owner_can_neither_begin_renew_nor_finish_a_running_fill(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    assert await message_cache.begin_fill(queue, "first", 10_000)
    assert not await message_cache.begin_fill(queue, "second", 10_000)
    assert not await message_cache.renew_fill(queue, "second", 10_000)
    assert not await message_cache.finish_fill(queue, "second")
    assert await message_cache.state(queue) is CacheState.FILLING


async def test_a_ready_queue_cannot_be_filled_again(message_cache: RedisMessageCache) -> None:
    queue = await ready_queue(message_cache)
    assert not await message_cache.begin_fill(queue, "another", 10_000)
    assert await message_cache.state(queue) is CacheState.READY


async def test_an_expired_lease_lets_another_owner_fill_and_the_first_one_lose(
    message_cache: RedisMessageCache,
) -> None:
    """Wall clock: the lease is a TTL inside Redis, which the test clock cannot move."""
    queue = new_queue()
    assert await message_cache.begin_fill(queue, "slow", 50)
    await asyncio.sleep(0.2)
    assert await message_cache.state(queue) is CacheState.ABSENT
    assert await message_cache.begin_fill(queue, "fast", 10_000)
    assert not await message_cache.renew_fill(queue, "slow", 10_000)
    assert not await message_cache.finish_fill(queue, "slow")
    assert await message_cache.finish_fill(queue, "fast")


async def test_beginning_a_fill_clears_what_a_previous_cache_left_but_messages_in_flight(
    message_cache: RedisMessageCache, raw_redis: Redis
) -> None:
    """In flight a consumer holds the message: the refill must not hand it out again
    (test_cache_reset.py); visible and delayed ones come back from the store."""
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(
        queue,
        [make_message("held"), make_message("stale"), make_message("late", delay_ms=5000)],
        now,
    )
    [held] = await receive(message_cache, queue, now, max_count=1)
    await raw_redis.delete(QueueKeys(queue).state)  # as if the lease had lapsed long ago
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.counts(queue, now) == MessageCounts(0, 1, 0)
    assert await message_cache.in_flight_ids(queue) == [held.message.message_id]
    assert await raw_redis.zscore(DUE_KEY, queue.key) == now + TIMEOUT_MS
    await message_cache.drop(queue)


async def test_load_adds_messages_while_filling_and_skips_those_already_cached(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    now = now_ms()
    sent_during_fill, stored = make_message("sent"), make_message("stored")
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.add(queue, [sent_during_fill], now)
    assert await message_cache.load(queue, "filler", [sent_during_fill, stored], now, {})
    assert await message_cache.finish_fill(queue, "filler")
    assert sorted(bodies(await receive(message_cache, queue, now))) == ["sent", "stored"]


async def test_load_does_not_bring_back_messages_deleted_during_the_fill(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    now = now_ms()
    never_cached, cached, kept = make_message("a"), make_message("b"), make_message("c")
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.load(queue, "filler", [cached], now, {})
    deleted = await message_cache.delete(queue, never_cached.message_id, "nonce")
    assert deleted is DeleteOutcome.NOT_CACHED
    assert await message_cache.delete(queue, cached.message_id, "nonce") is DeleteOutcome.DELETED
    assert await message_cache.load(queue, "filler", [never_cached, cached, kept], now, {})
    assert await message_cache.finish_fill(queue, "filler")
    assert bodies(await receive(message_cache, queue, now)) == ["c"]


async def test_load_adds_nothing_unless_a_fill_is_running(message_cache: RedisMessageCache) -> None:
    absent, ready = new_queue(), await ready_queue(message_cache)
    assert not await message_cache.load(absent, "filler", [make_message()], now_ms(), {})
    assert not await message_cache.load(ready, "filler", [make_message()], now_ms(), {})
    assert await message_cache.counts(absent, now_ms()) == MessageCounts(0, 0, 0)
    assert await message_cache.counts(ready, now_ms()) == MessageCounts(0, 0, 0)


async def test_load_respects_the_delay_of_stored_messages(message_cache: RedisMessageCache) -> None:
    queue = new_queue()
    now = now_ms()
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    later = make_message("later", sent_ms=now, delay_ms=5000)
    assert await message_cache.load(queue, "filler", [later], now, {})
    assert await message_cache.finish_fill(queue, "filler")
    assert await receive(message_cache, queue, now) == []
    assert bodies(await receive(message_cache, queue, now + 5000)) == ["later"]


async def test_load_by_an_owner_whose_lease_was_taken_over_is_refused_and_adds_nothing(
    message_cache: RedisMessageCache,
) -> None:
    """Wall clock: the lease is a TTL inside Redis, which the test clock cannot move."""
    queue = new_queue()
    now = now_ms()
    assert await message_cache.begin_fill(queue, "slow", 50)
    await asyncio.sleep(0.2)
    assert await message_cache.begin_fill(queue, "fast", 10_000)
    assert not await message_cache.load(queue, "slow", [make_message("from slow")], now, {})
    assert not await message_cache.load(queue, "slow", [], now, {})
    assert await message_cache.load(queue, "fast", [], now, {})
    assert await message_cache.load(queue, "fast", [make_message("from fast")], now, {})
    assert await message_cache.finish_fill(queue, "fast")
    assert bodies(await receive(message_cache, queue, now)) == ["from fast"]


async def test_load_puts_a_message_handed_out_during_the_outage_in_flight_until_its_time(
    message_cache: RedisMessageCache, raw_redis: Redis
) -> None:
    queue = new_queue()
    now = now_ms()
    handed_out, other = make_message("handed out"), make_message("other")
    hidden_until = {handed_out.message_id: now + 5000}
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.load(queue, "filler", [handed_out, other], now, hidden_until)
    assert await message_cache.finish_fill(queue, "filler")
    assert await message_cache.counts(queue, now) == MessageCounts(1, 1, 0)
    assert await raw_redis.zscore(DUE_KEY, queue.key) == now + 5000
    assert bodies(await receive(message_cache, queue, now)) == ["other"]
    assert await receive(message_cache, queue, now + 4999) == []
    [again] = await receive(message_cache, queue, now + 5000)
    assert again.message == handed_out
    assert again.receive_count == 2
    assert again.first_receive_timestamp_ms == now


async def test_load_makes_a_message_whose_hidden_time_has_passed_visible(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    now = now_ms()
    message = make_message("back already")
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.load(queue, "filler", [message], now, {message.message_id: now})
    assert await message_cache.finish_fill(queue, "filler")
    [delivery] = await receive(message_cache, queue, now)
    assert delivery.receive_count == 1


async def test_load_skips_messages_waiting_for_their_store_delete(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_queue()
    now = now_ms()
    deleted, kept = make_message("deleted"), make_message("kept")
    await message_cache.defer_store_delete(queue, deleted.message_id)
    try:
        assert await message_cache.begin_fill(queue, "filler", 10_000)
        assert await message_cache.load(queue, "filler", [deleted, kept], now, {})
        assert await message_cache.finish_fill(queue, "filler")
        assert bodies(await receive(message_cache, queue, now)) == ["kept"]
    finally:
        await message_cache.forget_store_deletes(queue, [deleted.message_id])


async def loaded_in_flight(cache: MessageCache, now: int) -> tuple[str, Message]:
    """A ready queue holding one message a fill loaded in flight until now + 60 s."""
    queue = new_queue()
    message = make_message("handed out during the outage")
    assert await cache.begin_fill(queue, "filler", 10_000)
    assert await cache.load(queue, "filler", [message], now, {message.message_id: now + 60_000})
    assert await cache.finish_fill(queue, "filler")
    return queue, message


async def test_a_message_loaded_in_flight_is_deleted_with_the_handle_the_store_gave_out(
    message_cache: RedisMessageCache,
) -> None:
    queue, message = await loaded_in_flight(message_cache, now_ms())
    outcome = await message_cache.delete(queue, message.message_id, "nonce-from-the-outage")
    assert outcome is DeleteOutcome.DELETED
    assert await message_cache.counts(queue, now_ms()) == MessageCounts(0, 0, 0)


async def test_a_message_loaded_in_flight_changes_visibility_with_the_handle_the_store_gave_out(
    message_cache: RedisMessageCache,
) -> None:
    now = now_ms()
    queue, message = await loaded_in_flight(message_cache, now)
    outcome = await message_cache.change_visibility(
        queue, message.message_id, "nonce-from-the-outage", now
    )
    assert outcome is VisibilityOutcome.CHANGED
    assert bodies(await receive(message_cache, queue, now)) == [message.body]


async def test_once_received_from_the_cache_a_loaded_message_rejects_the_outage_handle(
    message_cache: RedisMessageCache,
) -> None:
    now = now_ms()
    queue, message = await loaded_in_flight(message_cache, now)
    [delivery] = await receive(message_cache, queue, now + 60_000)
    outcome = await message_cache.delete(queue, message.message_id, "nonce-from-the-outage")
    assert outcome is DeleteOutcome.STALE_HANDLE
    changed = await message_cache.change_visibility(  # any handle of it applies (as SQS)
        queue, message.message_id, "nonce-from-the-outage", now_ms() + 90_000
    )
    assert changed is VisibilityOutcome.CHANGED
    current = await message_cache.delete(queue, message.message_id, delivery.receipt_nonce)
    assert current is DeleteOutcome.DELETED


# --- send, receive, delete --------------------------------------------------------------


async def test_a_sent_message_is_received_whole_with_its_receipt_details(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    message = make_message("Grüße")
    now = now_ms()
    assert await message_cache.add(queue, [message], now)
    outcome = await message_cache.receive(queue, 10, TIMEOUT_MS, now, RETENTION_MS, ["n1", "n2"])
    assert outcome is not None
    assert outcome.deliveries == [
        Delivery(message=message, receive_count=1, first_receive_timestamp_ms=now, receipt_nonce="n1")
    ]


async def test_messages_are_received_in_the_order_they_were_sent(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("1"), make_message("2"), make_message("3")], now)
    await message_cache.add(queue, [make_message("4")], now)
    assert bodies(await receive(message_cache, queue, now, max_count=3)) == ["1", "2", "3"]
    assert bodies(await receive(message_cache, queue, now, max_count=3)) == ["4"]


async def test_a_received_message_is_hidden_from_the_next_receive(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message()], now)
    assert len(await receive(message_cache, queue, now)) == 1
    assert await receive(message_cache, queue, now + TIMEOUT_MS - 1) == []


async def test_receive_hands_out_no_more_messages_than_it_has_nonces(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message(str(index)) for index in range(5)], now)
    outcome = await message_cache.receive(queue, 5, TIMEOUT_MS, now, RETENTION_MS, ["a", "b"])
    assert outcome is not None
    assert [delivery.receipt_nonce for delivery in outcome.deliveries] == ["a", "b"]


async def test_adding_the_same_message_twice_caches_it_once(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    message = make_message()
    now = now_ms()
    await message_cache.add(queue, [message], now)
    await message_cache.add(queue, [message], now)
    assert await message_cache.counts(queue, now) == MessageCounts(1, 0, 0)


async def test_a_received_message_is_deleted_with_its_handle(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message()], now)
    [delivery] = await receive(message_cache, queue, now)
    outcome = await message_cache.delete(queue, delivery.message.message_id, delivery.receipt_nonce)
    assert outcome is DeleteOutcome.DELETED
    assert await message_cache.counts(queue, now) == MessageCounts(0, 0, 0)
    assert await receive(message_cache, queue, now + TIMEOUT_MS) == []
    again = await message_cache.delete(queue, delivery.message.message_id, delivery.receipt_nonce)
    assert again is DeleteOutcome.NOT_CACHED


async def test_deleting_an_unknown_message_of_a_ready_queue_is_not_cached(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    outcome = await message_cache.delete(queue, str(uuid.uuid1()), "nonce")
    assert outcome is DeleteOutcome.NOT_CACHED


async def test_a_handle_from_an_earlier_receive_is_stale_and_deletes_nothing(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message()], now)
    [first] = await receive(message_cache, queue, now, timeout_ms=1000)
    [second] = await receive(message_cache, queue, now + 1000, timeout_ms=1000)
    assert second.receive_count == 2
    outcome = await message_cache.delete(queue, first.message.message_id, first.receipt_nonce)
    assert outcome is DeleteOutcome.STALE_HANDLE
    assert (await message_cache.counts(queue, now + 1000)).in_flight == 1
    current = await message_cache.delete(queue, second.message.message_id, second.receipt_nonce)
    assert current is DeleteOutcome.DELETED


async def test_one_delete_call_answers_each_handle_of_a_batch_in_order(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message(f"m{i}") for i in range(3)], now)
    first = {d.message.body: d for d in await receive(message_cache, queue, now, timeout_ms=1000)}
    [again] = await receive(message_cache, queue, now + 1000, max_count=1, timeout_ms=60_000)
    others = sorted(set(first) - {again.message.body})

    outcomes = await message_cache.delete_many(queue, [
        (again.message.message_id, first[again.message.body].receipt_nonce),  # earlier handle
        (first[others[0]].message.message_id, first[others[0]].receipt_nonce),
        (str(uuid.uuid1()), "never-cached"),
        (first[others[1]].message.message_id, first[others[1]].receipt_nonce),
    ])

    assert outcomes == [
        DeleteOutcome.STALE_HANDLE, DeleteOutcome.DELETED,
        DeleteOutcome.NOT_CACHED, DeleteOutcome.DELETED,
    ]
    assert await message_cache.counts(queue, now + 1000) == MessageCounts(0, 1, 0)
    assert await message_cache.delete_many(queue, []) == []


async def test_scripts_the_server_forgot_are_loaded_again_on_the_next_call(
    message_cache: RedisMessageCache, raw_redis: Redis
) -> None:
    # A restarted or flushed Redis has no scripts: the next call loads them and succeeds.
    queue = await ready_queue(message_cache)
    now = now_ms()
    await raw_redis.script_flush()
    await message_cache.add(queue, [make_message()], now)
    [delivery] = await receive(message_cache, queue, now)
    await raw_redis.script_flush()
    assert await message_cache.delete(
        queue, delivery.message.message_id, delivery.receipt_nonce
    ) is DeleteOutcome.DELETED


async def test_a_message_visible_again_after_its_timeout_is_deleted_with_its_last_handle(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("old"), make_message("other")], now)
    [delivery] = await receive(message_cache, queue, now, max_count=1, timeout_ms=1000)
    assert await sweep(message_cache, now + 1000) == [queue]
    outcome = await message_cache.delete(queue, delivery.message.message_id, delivery.receipt_nonce)
    assert outcome is DeleteOutcome.DELETED
    assert bodies(await receive(message_cache, queue, now + 1000)) == ["other"]


async def test_a_delayed_message_can_be_deleted_before_it_is_delivered(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    message = make_message(sent_ms=now, delay_ms=5000)
    await message_cache.add(queue, [message], now)
    assert await message_cache.delete(queue, message.message_id, "") is DeleteOutcome.DELETED
    assert await receive(message_cache, queue, now + 5000) == []


# --- delays, timeouts and the sweep -----------------------------------------------------


async def test_a_delayed_message_is_delivered_only_once_its_delay_has_passed(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("late", sent_ms=now, delay_ms=5000)], now)
    assert await message_cache.counts(queue, now) == MessageCounts(0, 0, 1)
    assert await receive(message_cache, queue, now + 4999) == []
    assert bodies(await receive(message_cache, queue, now + 5000)) == ["late"]


async def test_hidden_message_becomes_visible_after_timeout(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message()], now)
    [first] = await receive(message_cache, queue, now, timeout_ms=1000)
    assert await receive(message_cache, queue, now + 999) == []
    [second] = await receive(message_cache, queue, now + 1000, timeout_ms=1000)
    assert second.message == first.message
    assert second.receive_count == 2
    assert second.first_receive_timestamp_ms == now


async def test_messages_back_from_flight_are_received_before_newer_ones(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("first")], now)
    await receive(message_cache, queue, now, timeout_ms=1000)
    await message_cache.add(queue, [make_message("second")], now)
    assert bodies(await receive(message_cache, queue, now + 1000)) == ["first", "second"]


async def test_a_zero_visibility_timeout_leaves_the_message_visible(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("a"), make_message("b")], now)
    assert bodies(await receive(message_cache, queue, now, timeout_ms=0)) == ["a", "b"]
    assert await message_cache.counts(queue, now) == MessageCounts(2, 0, 0)
    again = await receive(message_cache, queue, now, timeout_ms=0)
    assert bodies(again) == ["a", "b"]
    assert [delivery.receive_count for delivery in again] == [2, 2]


async def test_messages_older_than_the_retention_period_are_dropped_not_delivered(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    old, fresh = make_message("old", sent_ms=now - 10_000), make_message("fresh", sent_ms=now)
    await message_cache.add(queue, [old, fresh], now)
    assert bodies(await receive(message_cache, queue, now, retention_ms=5_000)) == ["fresh"]
    assert await message_cache.delete(queue, old.message_id, "") is DeleteOutcome.NOT_CACHED


async def test_release_due_returns_queues_whose_hidden_messages_are_due(
    message_cache: RedisMessageCache,
) -> None:
    hidden, delayed, quiet = [await ready_queue(message_cache) for _ in range(3)]
    now = now_ms()
    await message_cache.add(hidden, [make_message()], now)
    await receive(message_cache, hidden, now, timeout_ms=1000)
    await message_cache.add(delayed, [make_message(sent_ms=now, delay_ms=1000)], now)
    await message_cache.add(quiet, [make_message(sent_ms=now, delay_ms=60_000)], now)
    assert set(await sweep(message_cache, now + 999)).isdisjoint({hidden, delayed})
    released = await sweep(message_cache, now + 1000)
    assert {hidden, delayed} <= set(released)
    assert quiet not in released
    assert await message_cache.counts(hidden, now + 1000) == MessageCounts(1, 0, 0)
    assert await message_cache.counts(delayed, now + 1000) == MessageCounts(1, 0, 0)
    assert hidden not in await sweep(message_cache, now + 1000)


async def test_release_due_forgets_a_queue_once_nothing_is_hidden(
    message_cache: RedisMessageCache, raw_redis: Redis
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message(), make_message()], now)
    await receive(message_cache, queue, now, max_count=1, timeout_ms=1000)
    await receive(message_cache, queue, now, max_count=1, timeout_ms=3000)
    assert await raw_redis.zscore(DUE_KEY, queue.key) == now + 1000
    await sweep(message_cache, now + 1000)
    assert await raw_redis.zscore(DUE_KEY, queue.key) == now + 3000
    await sweep(message_cache, now + 3000)
    assert await raw_redis.zscore(DUE_KEY, queue.key) is None


async def test_release_due_moves_at_most_the_limit_and_leaves_the_rest_due(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message(str(index)) for index in range(5)], now)
    await receive(message_cache, queue, now, timeout_ms=1000)
    await sweep(message_cache, now + 1000, limit=3)
    assert (await message_cache.counts(queue, now)).in_flight == 2
    assert queue in await sweep(message_cache, now + 1000, limit=3)
    assert (await message_cache.counts(queue, now)).in_flight == 0


async def test_next_due_ms_is_the_earliest_return_of_a_hidden_or_delayed_message(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    assert await message_cache.next_due_ms(queue) is None
    await message_cache.add(queue, [make_message(sent_ms=now, delay_ms=7000)], now)
    assert await message_cache.next_due_ms(queue) == now + 7000
    await message_cache.add(queue, [make_message()], now)
    await receive(message_cache, queue, now, timeout_ms=2000)
    assert await message_cache.next_due_ms(queue) == now + 2000


# --- change visibility ------------------------------------------------------------------


async def test_change_visibility_extends_the_time_a_message_stays_hidden(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message()], now)
    [delivery] = await receive(message_cache, queue, now, timeout_ms=1000)
    outcome = await message_cache.change_visibility(
        queue, delivery.message.message_id, delivery.receipt_nonce, now + 60_000
    )
    assert outcome is VisibilityOutcome.CHANGED
    assert await receive(message_cache, queue, now + 59_999) == []
    assert len(await receive(message_cache, queue, now + 60_000)) == 1


async def test_change_visibility_to_now_makes_the_message_visible_at_once(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("back"), make_message("newer")], now)
    [delivery] = await receive(message_cache, queue, now, max_count=1)
    outcome = await message_cache.change_visibility(
        queue, delivery.message.message_id, delivery.receipt_nonce, now
    )
    assert outcome is VisibilityOutcome.CHANGED
    assert await message_cache.counts(queue, now) == MessageCounts(2, 0, 0)
    assert bodies(await receive(message_cache, queue, now)) == ["back", "newer"]


async def test_change_visibility_with_an_earlier_receives_handle_applies_to_the_message(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message()], now)
    [first] = await receive(message_cache, queue, now - 5000, timeout_ms=1000)
    assert len(await receive(message_cache, queue, now, timeout_ms=60_000)) == 1
    outcome = await message_cache.change_visibility(
        queue, first.message.message_id, first.receipt_nonce, now + 1000
    )
    assert outcome is VisibilityOutcome.CHANGED
    assert await message_cache.next_due_ms(queue) == now + 1000


async def test_change_visibility_of_a_message_not_in_flight_changes_nothing(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    visible, delayed = make_message(), make_message(sent_ms=now, delay_ms=60_000)
    await message_cache.add(queue, [visible, delayed], now)
    for message in (visible, delayed):
        outcome = await message_cache.change_visibility(queue, message.message_id, "", now + 1000)
        assert outcome is VisibilityOutcome.NOT_IN_FLIGHT
    unknown = await message_cache.change_visibility(queue, str(uuid.uuid1()), "", now + 1000)
    assert unknown is VisibilityOutcome.UNKNOWN
    assert await message_cache.counts(queue, now) == MessageCounts(1, 0, 1)


async def test_change_visibility_after_the_timeout_passed_hides_the_message_again(
    message_cache: RedisMessageCache,
) -> None:
    """As SQS, a late heartbeat still applies while nobody received the message since."""
    queue = await ready_queue(message_cache)
    long_ago = now_ms() - 10_000
    await message_cache.add(queue, [make_message(sent_ms=long_ago)], long_ago)
    [delivery] = await receive(message_cache, queue, long_ago, timeout_ms=1000)
    now = now_ms()
    outcome = await message_cache.change_visibility(
        queue, delivery.message.message_id, delivery.receipt_nonce, now + 60_000
    )
    assert outcome is VisibilityOutcome.CHANGED
    assert await receive(message_cache, queue, now + 59_999) == []
    assert len(await receive(message_cache, queue, now + 60_000)) == 1


async def test_change_visibility_of_a_message_swept_back_hides_it_again(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    long_ago = now_ms() - 10_000
    await message_cache.add(queue, [make_message(sent_ms=long_ago), make_message()], long_ago)
    [delivery] = await receive(message_cache, queue, long_ago, max_count=1, timeout_ms=1000)
    now = now_ms()
    await sweep(message_cache, now)
    assert await message_cache.next_due_ms(queue) is None, "swept back: nothing in flight"
    outcome = await message_cache.change_visibility(
        queue, delivery.message.message_id, delivery.receipt_nonce, now + 60_000
    )
    assert outcome is VisibilityOutcome.CHANGED
    assert await message_cache.counts(queue, now) == MessageCounts(1, 1, 0)
    assert await message_cache.next_due_ms(queue) == now + 60_000
    assert len(await receive(message_cache, queue, now)) == 1, "only the other one"


async def test_change_visibility_with_a_handle_from_before_the_latest_receive_of_a_visible_message_changes_nothing(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    long_ago = now_ms() - 10_000
    await message_cache.add(queue, [make_message(sent_ms=long_ago)], long_ago)
    [first] = await receive(message_cache, queue, long_ago, timeout_ms=1000)
    [second] = await receive(message_cache, queue, long_ago + 2000, timeout_ms=1000)
    assert second.receipt_nonce != first.receipt_nonce
    now = now_ms()
    outcome = await message_cache.change_visibility(
        queue, first.message.message_id, first.receipt_nonce, now + 60_000
    )
    assert outcome is VisibilityOutcome.NOT_IN_FLIGHT
    assert len(await receive(message_cache, queue, now)) == 1


# --- counts, purge, drop ----------------------------------------------------------------


async def test_counts_tell_visible_in_flight_and_delayed_messages_apart(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message() for _ in range(4)], now)
    await message_cache.add(queue, [make_message(sent_ms=now, delay_ms=5000)], now)
    await receive(message_cache, queue, now, max_count=2, timeout_ms=1000)
    assert await message_cache.counts(queue, now) == MessageCounts(2, 2, 1)
    # hidden messages already due count as visible, before any sweep moves them
    assert await message_cache.counts(queue, now + 5000) == MessageCounts(5, 0, 0)


async def test_purge_removes_every_message_and_keeps_the_queue_ready(
    message_cache: RedisMessageCache, raw_redis: Redis
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message(), make_message(sent_ms=now, delay_ms=5000)], now)
    await message_cache.add(queue, [make_message()], now)
    await receive(message_cache, queue, now, max_count=1)
    await message_cache.purge(queue)
    assert await message_cache.state(queue) is CacheState.READY
    assert await message_cache.counts(queue, now) == MessageCounts(0, 0, 0)
    assert await raw_redis.zscore(DUE_KEY, queue.key) is None
    assert await message_cache.add(queue, [make_message("after")], now)
    assert bodies(await receive(message_cache, queue, now)) == ["after"]


async def test_drop_forgets_the_queue_entirely(
    message_cache: RedisMessageCache, raw_redis: Redis
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message(), make_message()], now)
    await receive(message_cache, queue, now, max_count=1)
    await message_cache.drop(queue)
    assert await message_cache.state(queue) is CacheState.ABSENT
    keys = QueueKeys(queue)
    assert await raw_redis.exists(keys.state, *keys.message_keys()) == 0
    assert await raw_redis.zscore(DUE_KEY, queue.key) is None


# --- servers ----------------------------------------------------------------------------


async def test_queues_live_on_the_server_the_ring_picks_and_each_server_is_used(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    with EmbeddedRedis(tmp_path / "second") as second:
        urls = [redis_server.url, second.url]
        cache = RedisMessageCache(urls)
        try:
            by_server: dict[str, str] = {}
            while len(by_server) < 2:
                queue = new_queue()
                by_server.setdefault(cache.server_url_for(queue), queue)
            now = now_ms()
            for url, queue in by_server.items():
                assert await cache.begin_fill(queue, "filler", 10_000)
                assert await cache.finish_fill(queue, "filler")
                await cache.add(queue, [make_message(url)], now)
                await cache.receive(queue, 1, 1000, now, RETENTION_MS, ["n"])
                client: Redis = Redis.from_url(url, decode_responses=True)
                try:
                    assert await client.get(QueueKeys(queue).state) == "ready"
                    assert await client.zscore(DUE_KEY, queue.key) == now + 1000
                finally:
                    await client.aclose()
            assert set(await sweep(cache, now + 1000)) >= set(by_server.values())
        finally:
            await cache.close()


async def test_a_killed_server_makes_calls_fail_with_storage_unavailable(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "doomed")
    server.start()
    cache = RedisMessageCache([server.url], down_seconds=0.0)
    try:
        queue = await ready_queue(cache)
        server.kill()
        with pytest.raises(StorageUnavailable):
            await cache.state(queue)
        with pytest.raises(StorageUnavailable):
            await cache.receive(queue, 1, TIMEOUT_MS, now_ms(), RETENTION_MS, ["n"])
        with pytest.raises(StorageUnavailable):
            await cache.counts(queue, now_ms())
    finally:
        await cache.close()
        server.stop()


async def test_a_server_remembered_as_down_fails_calls_without_trying_it(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "flaky")
    server.start()
    cache = RedisMessageCache([server.url], down_seconds=3600.0)
    try:
        queue = new_queue()
        server.kill()
        with pytest.raises(StorageUnavailable):
            await cache.state(queue)
        # the same port answers again, but the breaker still holds the server down
        restarted = EmbeddedRedis(tmp_path / "flaky", port=server.port)
        restarted.start()
        try:
            with pytest.raises(StorageUnavailable):
                await cache.state(queue)
        finally:
            restarted.stop()
    finally:
        await cache.close()
        server.stop()


async def test_a_restarted_server_comes_back_empty_so_its_queues_are_absent(
    tmp_path: Path,
) -> None:
    server = EmbeddedRedis(tmp_path / "restarted")
    server.start()
    cache = RedisMessageCache([server.url], down_seconds=0.0)
    try:
        queue = await ready_queue(cache)
        await cache.add(queue, [make_message()], now_ms())
        server.kill()
        with pytest.raises(StorageUnavailable):
            await cache.state(queue)
        server = EmbeddedRedis(tmp_path / "restarted", port=server.port)
        server.start()
        assert await cache.state(queue) is CacheState.ABSENT
        assert await cache.begin_fill(queue, "filler", 10_000)  # scripts are loaded again
    finally:
        await cache.close()
        server.stop()


async def test_release_due_skips_an_unreachable_server_and_sweeps_the_others(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    doomed = EmbeddedRedis(tmp_path / "doomed")
    doomed.start()
    cache = RedisMessageCache([redis_server.url, doomed.url])
    try:
        queue = new_queue()
        while cache.server_url_for(queue) != redis_server.url:
            queue = new_queue()
        now = now_ms()
        assert await cache.begin_fill(queue, "filler", 10_000)
        assert await cache.finish_fill(queue, "filler")
        await cache.add(queue, [make_message(sent_ms=now, delay_ms=1000)], now)
        doomed.kill()
        assert queue in await sweep(cache, now + 1000)
    finally:
        await cache.close()
        doomed.stop()


# --- long-poll wake-ups -----------------------------------------------------------------


class Hearing:
    """Collects what `cache.arrivals()` yields, in a task of its own, as a long poll would."""

    def __init__(self, cache: MessageCache) -> None:
        self.names: asyncio.Queue[QueueIdentity] = asyncio.Queue()
        self.ended = asyncio.Event()
        self.task = asyncio.create_task(self._consume(cache))

    async def _consume(self, cache: MessageCache) -> None:
        try:
            async for queue in cache.arrivals():
                self.names.put_nowait(queue)
        finally:
            self.ended.set()

    async def next_name(self) -> QueueIdentity:
        return await asyncio.wait_for(self.names.get(), 10)

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def subscribers(client: Redis) -> int:
    [(_channel, count)] = await client.pubsub_numsub(ARRIVALS_CHANNEL)
    return int(count)


@contextlib.asynccontextmanager
async def hearing(cache: MessageCache, *servers: Redis) -> AsyncIterator[Hearing]:
    """Arrivals of `cache`, once subscribed on each of `servers` (each its own test's)."""
    heard = Hearing(cache)
    try:
        for server in servers:

            async def subscribed(server: Redis = server) -> bool:
                return await subscribers(server) >= 1

            await wait_until(subscribed, "the arrivals subscription is in place")
        yield heard
    finally:
        await heard.stop()


async def test_a_send_to_a_queue_a_long_poll_listens_on_is_heard_by_arrivals(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    quiet, listened = await ready_queue(lone_cache), await ready_queue(lone_cache)
    await lone_cache.listen(listened, 10_000)
    async with hearing(lone_cache, lone_raw_redis) as heard:
        await lone_cache.add(quiet, [make_message()], now_ms())  # nobody listens: no publish
        await lone_cache.add(listened, [make_message()], now_ms())
        assert await heard.next_name() == listened


async def test_a_delayed_send_wakes_nobody(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    delayed, immediate = await ready_queue(lone_cache), await ready_queue(lone_cache)
    await lone_cache.listen(delayed, 10_000)
    await lone_cache.listen(immediate, 10_000)
    now = now_ms()
    async with hearing(lone_cache, lone_raw_redis) as heard:
        await lone_cache.add(delayed, [make_message(sent_ms=now, delay_ms=60_000)], now)
        await lone_cache.add(immediate, [make_message()], now)
        assert await heard.next_name() == immediate


async def test_a_listen_lapses_after_its_ttl(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    """Wall clock: the listen is a TTL inside Redis, which the test clock cannot move."""
    lapsed, listened = await ready_queue(lone_cache), await ready_queue(lone_cache)
    await lone_cache.listen(lapsed, 50)
    await asyncio.sleep(0.2)
    await lone_cache.listen(listened, 10_000)
    async with hearing(lone_cache, lone_raw_redis) as heard:
        await lone_cache.add(lapsed, [make_message()], now_ms())
        await lone_cache.add(listened, [make_message()], now_ms())
        assert await heard.next_name() == listened


async def test_messages_back_from_flight_wake_listeners_through_the_sweep(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    queue = await ready_queue(lone_cache)
    now = now_ms()
    await lone_cache.add(queue, [make_message()], now)
    await receive(lone_cache, queue, now, timeout_ms=1000)
    await lone_cache.listen(queue, 10_000)
    async with hearing(lone_cache, lone_raw_redis) as heard:
        assert await sweep(lone_cache, now + 1000) == [queue]
        assert await heard.next_name() == queue


async def test_messages_a_receive_brought_back_and_left_visible_wake_listeners(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    queue = await ready_queue(lone_cache)
    now = now_ms()
    await lone_cache.add(queue, [make_message(), make_message()], now)
    await receive(lone_cache, queue, now, timeout_ms=1000)
    await lone_cache.listen(queue, 10_000)
    async with hearing(lone_cache, lone_raw_redis) as heard:
        assert len(await receive(lone_cache, queue, now + 1000, max_count=1)) == 1
        assert await heard.next_name() == queue


async def test_a_message_made_visible_by_change_visibility_wakes_listeners(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    queue = await ready_queue(lone_cache)
    now = now_ms()
    await lone_cache.add(queue, [make_message()], now)
    [delivery] = await receive(lone_cache, queue, now)
    await lone_cache.listen(queue, 10_000)
    async with hearing(lone_cache, lone_raw_redis) as heard:
        outcome = await lone_cache.change_visibility(
            queue, delivery.message.message_id, delivery.receipt_nonce, now
        )
        assert outcome is VisibilityOutcome.CHANGED
        assert await heard.next_name() == queue


async def test_arrivals_are_heard_from_every_server(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "one") as one, EmbeddedRedis(tmp_path / "two") as two:
        cache = RedisMessageCache([one.url, two.url])
        try:
            by_server: dict[str, str] = {}
            while len(by_server) < 2:
                queue = new_queue()
                by_server.setdefault(cache.server_url_for(queue), queue)
            for queue in by_server.values():
                assert await cache.begin_fill(queue, "filler", 10_000)
                assert await cache.finish_fill(queue, "filler")
                await cache.listen(queue, 10_000)
            async with raw_client(one.url) as first, raw_client(two.url) as second:
                async with hearing(cache, first, second) as heard:
                    for queue in by_server.values():
                        await cache.add(queue, [make_message()], now_ms())
                    assert {await heard.next_name(), await heard.next_name()} == set(
                        by_server.values()
                    )
        finally:
            await cache.close()


async def test_arrivals_ride_out_a_server_restart_and_warn_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Wall clock: the outage must last long enough for several resubscribe attempts to fail."""
    server = EmbeddedRedis(tmp_path / "restarted")
    server.start()
    cache = RedisMessageCache([server.url], down_seconds=0.0)
    caplog.set_level(logging.WARNING, logger="cqs.redis_cache.arrivals")
    try:
        async with raw_client(server.url) as before:
            async with hearing(cache, before) as heard:
                server.kill()
                await asyncio.sleep(0.5)  # several resubscribe attempts fail meanwhile
                server = EmbeddedRedis(tmp_path / "restarted", port=server.port)
                server.start()
                async with raw_client(server.url) as after:

                    async def subscribed_again() -> bool:
                        return await subscribers(after) >= 1

                    await wait_until(subscribed_again, "arrivals subscribe again")
                queue = await ready_queue(cache)
                await cache.listen(queue, 10_000)
                await cache.add(queue, [make_message()], now_ms())
                assert await heard.next_name() == queue
                assert not heard.task.done()
        lost = [r for r in caplog.records if "lost the arrivals subscription" in r.getMessage()]
        again = [r for r in caplog.records if "heard again" in r.getMessage()]
        assert (len(lost), len(again)) == (1, 1)
    finally:
        await cache.close()
        server.stop()


async def test_cancelling_the_consumer_closes_its_subscriptions(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    async with hearing(lone_cache, lone_raw_redis) as heard:
        await heard.stop()

    async def unsubscribed() -> bool:
        return await subscribers(lone_raw_redis) == 0

    await wait_until(unsubscribed, "the subscription is closed")


async def test_closing_the_cache_ends_arrivals_and_closes_its_subscriptions(
    lone_redis: EmbeddedRedis, lone_raw_redis: Redis
) -> None:
    cache = RedisMessageCache([lone_redis.url])
    async with hearing(cache, lone_raw_redis) as heard:
        await cache.close()
        await asyncio.wait_for(heard.ended.wait(), 10)
        assert heard.task.exception() is None

    async def unsubscribed() -> bool:
        return await subscribers(lone_raw_redis) == 0

    await wait_until(unsubscribed, "the subscription is closed")


# --- retention trimming -----------------------------------------------------------------


async def test_trim_expired_drops_old_messages_from_the_head_up_to_the_first_live_one(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    old = [make_message(f"old {index}", sent_ms=now - 10_000) for index in range(2)]
    fresh = make_message("fresh", sent_ms=now)
    old_behind = make_message("old behind", sent_ms=now - 10_000)
    await message_cache.add(queue, [*old, fresh, old_behind], now)
    assert await message_cache.trim_expired(queue, now, 5_000) == 2
    assert await message_cache.trim_expired(queue, now, 5_000) == 0
    assert await message_cache.delete(queue, old[0].message_id, "") is DeleteOutcome.NOT_CACHED
    assert bodies(await receive(message_cache, queue, now)) == ["fresh", "old behind"]


async def test_trim_expired_leaves_messages_in_flight_and_delayed_alone(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    old = now - 10_000
    await message_cache.add(queue, [make_message("in flight", sent_ms=old)], now)
    await receive(message_cache, queue, now)
    await message_cache.add(queue, [make_message("delayed", sent_ms=old, delay_ms=20_000)], now)
    assert await message_cache.trim_expired(queue, now, 5_000) == 0
    assert await message_cache.counts(queue, now) == MessageCounts(0, 1, 1)


async def test_trim_expired_drops_an_expired_message_once_it_is_back_from_flight(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(queue, [make_message("old", sent_ms=now - 10_000)], now)
    await receive(message_cache, queue, now, timeout_ms=1000)
    await sweep(message_cache, now + 1000)
    assert await message_cache.trim_expired(queue, now + 1000, 5_000) == 1
    assert await message_cache.counts(queue, now + 1000) == MessageCounts(0, 0, 0)


async def test_trim_expired_drops_at_most_a_thousand_messages_per_call(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(message_cache)
    now = now_ms()
    await message_cache.add(
        queue, [make_message(str(index), sent_ms=now - 10_000) for index in range(1003)], now
    )
    assert await message_cache.trim_expired(queue, now, 5_000) == 1000
    assert await message_cache.trim_expired(queue, now, 5_000) == 3


# --- deferred store deletes -------------------------------------------------------------


async def test_deferred_store_deletes_are_listed_by_queue_until_forgotten(
    lone_cache: RedisMessageCache,
) -> None:
    first, second = new_queue(), new_queue()
    await lone_cache.defer_store_delete(first, "a")
    await lone_cache.defer_store_delete(first, "b")
    await lone_cache.defer_store_delete(first, "b")
    await lone_cache.defer_store_delete(second, "c")
    listed = await lone_cache.deferred_store_deletes(100)
    assert {queue: sorted(ids) for queue, ids in listed.items()} == {first: ["a", "b"], second: ["c"]}
    await lone_cache.forget_store_deletes(first, ["a"])
    assert await lone_cache.deferred_store_deletes(100) == {first: ["b"], second: ["c"]}


async def test_deferred_store_deletes_give_no_more_ids_than_the_limit(
    lone_cache: RedisMessageCache,
) -> None:
    for queue in (new_queue(), new_queue(), new_queue()):
        for index in range(4):
            await lone_cache.defer_store_delete(queue, f"{queue.name}-{index}")
    listed = await lone_cache.deferred_store_deletes(6)
    assert sum(len(ids) for ids in listed.values()) == 6
    assert all(ids for ids in listed.values())


async def test_a_queue_whose_deferred_deletes_are_all_forgotten_leaves_the_index(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    queue = new_queue()
    await lone_cache.defer_store_delete(queue, "a")
    await lone_cache.defer_store_delete(queue, "b")
    assert await lone_raw_redis.sismember(STORE_DELETE_QUEUES_KEY, queue.key)
    await lone_cache.forget_store_deletes(queue, ["a"])
    assert await lone_raw_redis.sismember(STORE_DELETE_QUEUES_KEY, queue.key)
    await lone_cache.forget_store_deletes(queue, ["b", "never deferred"])
    assert not await lone_raw_redis.sismember(STORE_DELETE_QUEUES_KEY, queue.key)
    assert await lone_cache.deferred_store_deletes(100) == {}


async def test_purge_drop_and_refill_keep_deferred_store_deletes(
    lone_cache: RedisMessageCache,
) -> None:
    queue = await ready_queue(lone_cache)
    await lone_cache.defer_store_delete(queue, "waiting")
    await lone_cache.purge(queue)
    await lone_cache.drop(queue)
    assert await lone_cache.begin_fill(queue, "filler", 10_000)
    assert await lone_cache.deferred_store_deletes(100) == {queue: ["waiting"]}


async def test_deferred_store_deletes_come_from_every_reachable_server(
    tmp_path: Path, lone_redis: EmbeddedRedis
) -> None:
    doomed = EmbeddedRedis(tmp_path / "doomed")
    doomed.start()
    cache = RedisMessageCache([lone_redis.url, doomed.url], down_seconds=0.0)
    try:
        on_lone, on_doomed = new_queue(), new_queue()
        while cache.server_url_for(on_lone) != lone_redis.url:
            on_lone = new_queue()
        while cache.server_url_for(on_doomed) != doomed.url:
            on_doomed = new_queue()
        await cache.defer_store_delete(on_lone, "x")
        await cache.defer_store_delete(on_doomed, "y")
        assert await cache.deferred_store_deletes(100) == {on_lone: ["x"], on_doomed: ["y"]}
        doomed.kill()
        assert await cache.deferred_store_deletes(100) == {on_lone: ["x"]}
    finally:
        await cache.close()
        doomed.stop()


# --- the sweep lease --------------------------------------------------------------------


async def queue_due_at(cache: MessageCache, now: int) -> QueueIdentity:
    """A ready queue with one message in flight until now + 1 s."""
    queue = await ready_queue(cache)
    await cache.add(queue, [make_message()], now)
    await receive(cache, queue, now, timeout_ms=1000)
    return queue


async def test_only_the_sweeper_holding_a_servers_lease_sweeps_it(
    lone_cache: RedisMessageCache,
) -> None:
    now = now_ms()
    queue = await queue_due_at(lone_cache, now)
    assert await lone_cache.release_due(now, 100, "first", 60_000) == []  # takes the lease
    assert await lone_cache.release_due(now + 1000, 100, "second", 60_000) == []
    assert (await lone_cache.counts(queue, now)).in_flight == 1
    assert await lone_cache.release_due(now + 1000, 100, "first", 60_000) == [queue]


async def test_a_lapsed_sweep_lease_passes_to_another_sweeper(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    now = now_ms()
    queue = await queue_due_at(lone_cache, now)
    assert await lone_cache.release_due(now, 100, "dying", 100) == []

    async def lapsed() -> bool:
        return await lone_raw_redis.exists(SWEEPER_KEY) == 0

    await wait_until(lapsed, "the sweep lease lapses")
    assert await lone_cache.release_due(now + 1000, 100, "survivor", 60_000) == [queue]
    assert await lone_raw_redis.get(SWEEPER_KEY) == "survivor"
    assert await lone_cache.release_due(now + 1000, 100, "dying", 100) == []


async def test_each_sweep_renews_the_holders_lease(
    lone_cache: RedisMessageCache, lone_raw_redis: Redis
) -> None:
    await lone_cache.release_due(now_ms(), 100, "holder", 1000)
    await lone_cache.release_due(now_ms(), 100, "holder", 60_000)
    assert await lone_raw_redis.pttl(SWEEPER_KEY) > 1000
    await lone_cache.release_due(now_ms(), 100, "other", 1000)
    assert await lone_raw_redis.get(SWEEPER_KEY) == "holder"
