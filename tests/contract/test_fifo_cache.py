"""The FIFO part of the MessageCache port against a real redis-server: admission
(deduplication keys and sequence numbers), group order and locks, attempt ids, and
deduplication records loaded back after a loss."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from cqs.domain.model import Deduplication, DeduplicationClaim, Message, QueueIdentity
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.keys import QueueKeys
from tests.contract.test_message_cache import now_ms, raw_client

QUEUE_ID = "incarnation-1"


@pytest.fixture(autouse=True)
async def drop_queues_afterwards(message_cache: RedisMessageCache) -> AsyncIterator[None]:
    """Leave nothing due behind: other suites sweep the same Redis and count what is due."""
    yield
    while CREATED:
        await message_cache.drop(CREATED.pop())


CREATED: list[QueueIdentity] = []


def new_fifo_queue() -> QueueIdentity:
    CREATED.append(QueueIdentity("000000000000", "us-east-1", f"q-{uuid.uuid4().hex}.fifo"))
    return CREATED[-1]


async def ready_fifo_queue(cache: RedisMessageCache) -> QueueIdentity:
    queue = new_fifo_queue()
    assert await cache.begin_fill(queue, "filler", 10_000)
    assert await cache.finish_fill(queue, "filler")
    return queue


def fifo_message(body: str, group: str, sequence: int, sent_ms: int) -> Message:
    return Message(
        message_id=str(uuid.uuid1()),
        body=body,
        md5_of_body=hashlib.md5(body.encode()).hexdigest(),
        sent_timestamp_ms=sent_ms,
        visible_at_ms=sent_ms,
        sender_id="AIDATEST",
        group_id=group,
        deduplication_id=f"d-{body}",
        sequence_number=sequence,
    )


async def send(
    cache: RedisMessageCache, queue: QueueIdentity, items: list[tuple[str, str]], at_ms: int
) -> list[Message]:
    """Admit (body, group) pairs, number them and add them, as the service does."""
    drafts = [fifo_message(body, group, 0, at_ms) for body, group in items]
    admission = await cache.admit(
        queue, QUEUE_ID, [(f"d-{m.body}", m.message_id) for m in drafts], at_ms
    )
    numbered = [
        replace(m, sequence_number=o.sequence_number)
        for m, o in zip(drafts, admission.outcomes, strict=True)
        if o.outcome == "new"
    ]
    await cache.add(queue, numbered, at_ms, QUEUE_ID, {m.message_id: f"d-{m.body}" for m in numbered})
    return numbered


async def receive(cache: RedisMessageCache, queue: QueueIdentity, at_ms: int, count: int = 10,
                  timeout_ms: int = 30_000, attempt: str | None = None) -> list[str]:
    outcome = await cache.receive_fifo(
        queue, count, timeout_ms, at_ms, 10**9, [uuid.uuid4().hex for _ in range(count)], 0, attempt
    )
    assert outcome is not None
    return [d.message.body for d in outcome.deliveries]


async def test_admission_numbers_in_order_and_names_the_original_of_a_duplicate(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    first = await message_cache.admit(queue, QUEUE_ID, [("k1", "id-1"), ("k2", "id-2")], at)
    assert first.cache_ready
    assert [o.outcome for o in first.outcomes] == ["new", "new"]
    assert first.outcomes[0].sequence_number < first.outcomes[1].sequence_number
    assert first.outcomes[0].sequence_number >= at * 1000
    # k1 is held but not stored yet: another send with it must wait
    waiting = await message_cache.admit(queue, QUEUE_ID, [("k1", "id-3")], at)
    assert waiting.outcomes[0].outcome == "pending"
    # the same send asking again keeps its number
    again = await message_cache.admit(queue, QUEUE_ID, [("k1", "id-1")], at)
    assert again.outcomes[0] == first.outcomes[0]
    # once stored, the key answers with the original
    stored = replace(
        fifo_message("one", "g", first.outcomes[0].sequence_number, at), message_id="id-1"
    )
    await message_cache.add(queue, [stored], at, QUEUE_ID, {"id-1": "k1"})
    duplicate = await message_cache.admit(queue, QUEUE_ID, [("k1", "id-4")], at)
    assert (duplicate.outcomes[0].outcome, duplicate.outcomes[0].message_id) == (
        "duplicate", "id-1"
    )


async def test_an_abandoned_admission_frees_its_key_and_empty_keys_only_number(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    await message_cache.admit(queue, QUEUE_ID, [("k", "id-1")], at)
    await message_cache.abandon(queue, QUEUE_ID, [("k", "id-1")])
    retried = await message_cache.admit(queue, QUEUE_ID, [("k", "id-2")], at)
    assert retried.outcomes[0].outcome == "new"
    unkeyed = await message_cache.admit(queue, QUEUE_ID, [("", "a"), ("", "b"), ("", "c")], at)
    assert [o.outcome for o in unkeyed.outcomes] == ["new", "new", "new"]
    assert len({o.sequence_number for o in unkeyed.outcomes}) == 3


async def test_keys_of_another_queue_incarnation_do_not_deduplicate(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    await message_cache.admit(queue, "old-incarnation", [("k", "id-1")], at)
    fresh = await message_cache.admit(queue, QUEUE_ID, [("k", "id-2")], at)
    assert fresh.outcomes[0].outcome == "new"


async def test_a_group_with_a_message_in_flight_is_skipped_until_it_is_deleted(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    sent = await send(message_cache, queue, [("a1", "A"), ("a2", "A"), ("b1", "B")], at)
    held = await message_cache.receive_fifo(queue, 1, 30_000, at, 10**9, ["nonce-a1"], 0, None)
    assert held is not None and [d.message.body for d in held.deliveries] == ["a1"]
    assert await receive(message_cache, queue, at) == ["b1"]
    assert await receive(message_cache, queue, at) == []
    deleted = await message_cache.delete(queue, sent[0].message_id, "nonce-a1")
    assert deleted.value == "deleted"
    assert await receive(message_cache, queue, at) == ["a2"]


async def test_messages_back_from_flight_keep_their_group_order(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    await send(message_cache, queue, [("m1", "g"), ("m2", "g"), ("m3", "g")], at)
    assert await receive(message_cache, queue, at, count=2, timeout_ms=1_000) == ["m1", "m2"]
    later = at + 2_000  # both timed out and came back at the head
    assert await receive(message_cache, queue, later) == ["m1", "m2", "m3"]


async def test_a_repeated_attempt_id_gets_the_same_messages(
    message_cache: RedisMessageCache,
) -> None:
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    await send(message_cache, queue, [("x1", "g"), ("x2", "g"), ("y1", "h")], at)
    first = await message_cache.receive_fifo(queue, 2, 30_000, at, 10**9, ["n1", "n2"], 0, "att")
    again = await message_cache.receive_fifo(queue, 2, 30_000, at, 10**9, ["n3", "n4"], 0, "att")
    assert first is not None and again is not None
    assert [(d.message.body, d.receipt_nonce) for d in again.deliveries] == [
        (d.message.body, d.receipt_nonce) for d in first.deliveries
    ] == [("x1", "n1"), ("x2", "n2")]


async def test_loaded_deduplication_records_answer_as_duplicates(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_fifo_queue()  # never filled: as after a Redis restart
    at = now_ms()
    records = [Deduplication("k", "id-9", 5_000_000_000_000_000, at + 60_000),
               Deduplication("lapsed", "id-8", 4_000_000_000_000_000, at - 1)]
    assert await message_cache.load_deduplications(queue, QUEUE_ID, records, at) == 1
    answer = await message_cache.admit(
        queue, QUEUE_ID, [("k", "id-10"), ("other", "id-11"), ("lapsed", "id-12")], at
    )
    assert not answer.cache_ready  # not filled: the caller must ask the store too
    assert (answer.outcomes[0].outcome, answer.outcomes[0].message_id) == ("duplicate", "id-9")
    assert [o.outcome for o in answer.outcomes[1:]] == ["new", "new"]
    assert answer.outcomes[1].sequence_number > 5_000_000_000_000_000  # numbering went on


async def test_a_refill_marks_stored_a_key_whose_cache_add_never_came(
    message_cache: RedisMessageCache,
) -> None:
    """A send admitted (its key held as being stored), stored, whose cache add then failed:
    the refill's records from the store say it was stored, so the key answers as a
    duplicate at once, not `pending` until its 60-s lease lapses (then `new`: a duplicate
    message)."""
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    admitted = await message_cache.admit(queue, QUEUE_ID, [("k", "id-1")], at)
    sequence = admitted.outcomes[0].sequence_number
    # no add: it failed; the store holds the message and its deduplication record
    records = [Deduplication("k", "id-1", sequence, at + 300_000)]
    assert await message_cache.load_deduplications(queue, QUEUE_ID, records, at) == 1

    repeated = await message_cache.admit(queue, QUEUE_ID, [("k", "id-2")], at)

    assert (repeated.outcomes[0].outcome, repeated.outcomes[0].message_id) == (
        "duplicate", "id-1"
    )
    assert repeated.outcomes[0].sequence_number == sequence


async def test_a_refill_in_store_order_still_delivers_each_group_in_sequence_order(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_fifo_queue()
    at = now_ms()
    messages = [fifo_message(f"m{i}", "g" if i % 2 else "h", 100 + i, at) for i in range(12)]
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    # the store hands pages back in its own order (shards), not in sequence order
    shuffled = messages[7:] + messages[:3] + messages[3:7][::-1]
    assert await message_cache.load(queue, "filler", shuffled, at, {})
    assert await message_cache.finish_fill(queue, "filler")
    by_group: dict[str, list[str]] = {"g": [], "h": []}
    for _ in range(6):
        outcome = await message_cache.receive_fifo(
            queue, 3, 30_000, at, 10**9, ["a", "b", "c"], 0, None
        )
        assert outcome is not None
        for delivery in outcome.deliveries:
            by_group[delivery.message.group_id or ""].append(delivery.message.body)
            await message_cache.delete(queue, delivery.message.message_id, delivery.receipt_nonce)
    assert by_group == {
        "g": [f"m{i}" for i in range(1, 12, 2)],
        "h": [f"m{i}" for i in range(0, 12, 2)],
    }
    counts = await message_cache.counts(queue, at)
    assert (counts.visible, counts.in_flight) == (0, 0)


async def test_the_first_message_of_a_group_comes_first_even_behind_a_thousand_others(
    message_cache: RedisMessageCache,
) -> None:
    queue = new_fifo_queue()
    at = now_ms()
    messages = [fifo_message(f"m{i}", "g", 1_000 + i, at) for i in range(1_100)]
    assert await message_cache.begin_fill(queue, "filler", 10_000)
    assert await message_cache.load(queue, "filler", messages[::-1], at, {})  # newest first
    assert await message_cache.finish_fill(queue, "filler")
    outcome = await message_cache.receive_fifo(queue, 2, 30_000, at, 10**9, ["a", "b"], 0, None)
    assert outcome is not None
    assert [d.message.body for d in outcome.deliveries] == ["m0", "m1"]


async def test_a_message_back_from_flight_is_served_while_a_later_one_of_its_group_is_held(
    message_cache: RedisMessageCache,
) -> None:
    """The group is served up to its first message in flight (AWS's FIFO delivery logic)."""
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    sent = await send(message_cache, queue, [("m1", "g"), ("m2", "g"), ("m3", "g")], at)
    held = await message_cache.receive_fifo(queue, 2, 30_000, at, 10**9, ["n1", "n2"], 0, None)
    assert held is not None and [d.message.body for d in held.deliveries] == ["m1", "m2"]
    changed = await message_cache.change_visibility(queue, sent[0].message_id, "n1", at)
    assert changed.value == "changed"
    assert await receive(message_cache, queue, at) == ["m1"]  # m3 waits behind m2
    assert await receive(message_cache, queue, at + 31_000) == ["m1", "m2", "m3"]


async def test_a_group_count_left_by_an_earlier_cqs_holds_the_group_until_counted_down(
    message_cache: RedisMessageCache, redis_server: EmbeddedRedis
) -> None:
    """An earlier cqs counted a group's messages in flight; a rolling upgrade finds the count."""
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    sent = await send(message_cache, queue, [("m1", "g"), ("m2", "g")], at)
    held = await message_cache.receive_fifo(queue, 1, 30_000, at, 10**9, ["n1"], 0, None)
    assert held is not None and [d.message.body for d in held.deliveries] == ["m1"]
    async with raw_client(redis_server.url) as raw:
        await raw.hset(QueueKeys(queue).group_locks, "g", "1")  # as the earlier cqs left it
    assert await receive(message_cache, queue, at) == []
    assert (await message_cache.delete(queue, sent[0].message_id, "n1")).value == "deleted"
    assert await receive(message_cache, queue, at) == ["m2"]


async def test_a_key_only_looked_up_finds_an_earlier_message_but_is_not_claimed(
    message_cache: RedisMessageCache,
) -> None:
    """`also` is the other DeduplicationScope's key: sends before a scope change still count."""
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    first = await message_cache.admit(queue, QUEUE_ID, [DeduplicationClaim("d", "id-1")], at)
    stored = replace(
        fifo_message("one", "g", first.outcomes[0].sequence_number, at), message_id="id-1"
    )
    await message_cache.add(queue, [stored], at, QUEUE_ID, {"id-1": "d"})
    found = await message_cache.admit(
        queue, QUEUE_ID, [DeduplicationClaim("g\nd", "id-2", "d")], at
    )
    assert (found.outcomes[0].outcome, found.outcomes[0].message_id) == ("duplicate", "id-1")
    elsewhere = await message_cache.admit(
        queue, QUEUE_ID, [DeduplicationClaim("h\nd", "id-3", "e")], at
    )
    assert elsewhere.outcomes[0].outcome == "new"
    # the looked-up key was not claimed by id-3: "d" still names id-1
    again = await message_cache.admit(queue, QUEUE_ID, [DeduplicationClaim("d", "id-4")], at)
    assert (again.outcomes[0].outcome, again.outcomes[0].message_id) == ("duplicate", "id-1")


async def test_a_fifo_delete_after_the_timeout_is_refused_unless_a_fill_reloaded_the_message(
    message_cache: RedisMessageCache,
) -> None:
    """SQS refuses an expired FIFO handle; a handle from before a cache loss is let through
    (the refill cannot tell whether it had expired), rather than deliver the message again."""
    queue = await ready_fifo_queue(message_cache)
    at = now_ms()
    [sent] = await send(message_cache, queue, [("m1", "g")], at)
    held = await message_cache.receive_fifo(queue, 1, 30_000, at, 10**9, ["n1"], 0, None)
    assert held is not None and len(held.deliveries) == 1
    await message_cache.change_visibility(queue, sent.message_id, "n1", at)  # visible again
    assert (await message_cache.delete(queue, sent.message_id, "n1")).value == "expired_handle"

    reloaded = new_fifo_queue()
    message = fifo_message("r1", "g", 100, at)
    assert await message_cache.begin_fill(reloaded, "filler", 10_000)
    assert await message_cache.load(reloaded, "filler", [message], at, {})
    assert await message_cache.finish_fill(reloaded, "filler")
    outcome = await message_cache.delete(reloaded, message.message_id, "from-before-the-loss")
    assert outcome.value == "deleted"
