"""Contract of MessageStore, run against CassandraMessageStore on a real Cassandra 5.0 node.

(Keyspaces of the earlier schema are refused until `cqs migrate` copies them: see the
migrate tests.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from cqs.cassandra_store import (
    CassandraConnection,
    CassandraMessageStore,
    CassandraQueueCatalog,
    CassandraSession,
    connect,
)
from cqs.cassandra_store.rows import message_uuid_at
from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import Deduplication, Message, MessageAttributeValue, Queue
from cqs.embedded.cassandra import EmbeddedCassandra
from tests.fixtures.cassandra_node import (
    CassandraTestSettings,
    cassandra_under_test,
    unique_keyspace,
)

BUCKET_MS = 300_000  # the bucket length the message_store fixture asks for


def now_ms() -> int:
    return int(time.time() * 1000)


def new_queue(name: str | None = None, retention_seconds: int = 345_600) -> Queue:
    return Queue(
        name=name or f"q-{uuid.uuid4().hex[:10]}",
        queue_id=str(uuid.uuid4()),
        attributes={"MessageRetentionPeriod": str(retention_seconds)},
    )


def new_message(
    sent_ms: int | None = None, delay_ms: int = 0, body: str | None = None
) -> Message:
    sent = now_ms() if sent_ms is None else sent_ms
    message_id = str(uuid.uuid1()) if sent_ms is None else str(message_uuid_at(sent))
    return Message(
        message_id=message_id,
        body=body if body is not None else f"body of {message_id}",
        md5_of_body="d41d8cd98f00b204e9800998ecf8427e",
        sent_timestamp_ms=sent,
        visible_at_ms=sent + delay_ms,
        sender_id="tester",
    )


async def scanned(
    store: CassandraMessageStore, queue: Queue, page_size: int
) -> list[list[Message]]:
    return [page async for page in store.scan(queue, page_size)]


def ids(messages: Sequence[Message]) -> set[str]:
    return {message.message_id for message in messages}


async def test_message_that_was_put_is_read_back_by_id(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    message = Message(
        message_id=str(uuid.uuid1()),
        body="hello ✓",
        md5_of_body="5d41402abc4b2a76b9719d911017c592",
        sent_timestamp_ms=now_ms(),
        visible_at_ms=now_ms() + 5000,
        sender_id="AIDAEXAMPLE",
        message_attributes={"blob": MessageAttributeValue("Binary", binary_value=b"\x00\xff")},
        md5_of_message_attributes="c" * 32,
    )

    await message_store.put(queue, [message])

    assert await message_store.get(queue, message.message_id) == message


async def test_deleted_message_is_gone_and_deleting_it_again_is_not_an_error(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    kept, deleted = new_message(), new_message()
    await message_store.put(queue, [kept, deleted])

    await message_store.delete(queue, deleted.message_id)
    await message_store.delete(queue, deleted.message_id)

    assert await message_store.get(queue, deleted.message_id) is None
    assert await message_store.get(queue, kept.message_id) == kept
    assert ids([m for page in await scanned(message_store, queue, 10) for m in page]) == {
        kept.message_id
    }


async def test_many_messages_of_mixed_sizes_are_put_and_deleted_in_batches(
    message_store: CassandraMessageStore,
) -> None:
    # Small messages share unlogged batches; 6 KiB ones exceed a batch's byte budget and
    # go alone: every one must still be written and deleted.
    queue = new_queue()
    messages = [
        new_message(body=("x" * 6000 if i % 4 == 0 else f"small {i}")) for i in range(25)
    ]
    await message_store.put(queue, messages)
    assert ids([m for page in await scanned(message_store, queue, 100) for m in page]) == ids(
        messages
    )

    doomed, kept = messages[:20], messages[20:]
    await message_store.delete_many(
        queue, [m.message_id for m in doomed] + ["not-a-message-id", str(uuid.uuid1())]
    )

    assert ids([m for page in await scanned(message_store, queue, 100) for m in page]) == ids(kept)
    for message in kept:
        assert await message_store.get(queue, message.message_id) == message
    await message_store.delete_many(queue, [])


async def test_ids_that_were_never_stored_read_as_missing(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()

    assert await message_store.get(queue, "not-a-message-id") is None
    assert await message_store.get(queue, str(uuid.uuid1())) is None
    await message_store.delete(queue, "not-a-message-id")


async def test_message_of_one_queue_is_not_visible_through_another(
    message_store: CassandraMessageStore,
) -> None:
    first, second = new_queue(), new_queue()
    message = new_message()
    await message_store.put(first, [message])

    assert await message_store.get(second, message.message_id) is None
    assert await message_store.count(second) == 0


async def test_message_expires_after_the_queue_retention_period(
    message_store: CassandraMessageStore,
) -> None:
    """Wall clock: retention is a Cassandra TTL, which the test clock cannot move."""
    queue = new_queue(retention_seconds=2)
    message = new_message()
    await message_store.put(queue, [message])
    assert await message_store.get(queue, message.message_id) == message

    await asyncio.sleep(3.5)

    assert await message_store.get(queue, message.message_id) is None
    assert await message_store.count(queue) == 0


async def test_scan_returns_every_message_once_across_buckets_oldest_bucket_first(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    start = now_ms() - 3 * BUCKET_MS
    messages = [new_message(sent_ms=start + (i % 4) * BUCKET_MS + i) for i in range(40)]
    await message_store.put(queue, messages)

    pages = await scanned(message_store, queue, 7)

    seen = [message for page in pages for message in page]
    assert sorted(ids(seen)) == sorted(ids(messages))
    assert len(seen) == len(messages)
    assert all(len(page) <= 7 for page in pages)
    bucket_order = [m.sent_timestamp_ms // BUCKET_MS for m in seen]
    assert bucket_order == sorted(bucket_order)


async def test_scan_with_small_pages_resumes_inside_crowded_shards(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    messages = [new_message() for _ in range(400)]  # several per shard
    await message_store.put(queue, messages)

    pages = await scanned(message_store, queue, 3)

    seen = [message for page in pages for message in page]
    assert len(seen) == 400
    assert ids(seen) == ids(messages)


async def test_scan_of_an_empty_queue_yields_no_pages(
    message_store: CassandraMessageStore,
) -> None:
    assert await scanned(message_store, new_queue(), 10) == []


async def test_sample_returns_only_messages_whose_delay_has_passed(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    ready = [new_message() for _ in range(5)]
    delayed = [new_message(delay_ms=600_000) for _ in range(5)]
    await message_store.put(queue, ready + delayed)

    sampled = await message_store.sample(queue, 10, now_ms())

    assert ids(sampled) == ids(ready)


async def test_sample_returns_at_most_the_limit_without_duplicates(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    await message_store.put(queue, [new_message() for _ in range(300)])

    sampled = await message_store.sample(queue, 10, now_ms())

    assert len(sampled) == 10
    assert len(ids(sampled)) == 10


async def test_sample_reaches_live_messages_behind_drained_old_buckets(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    old = [new_message(sent_ms=now_ms() - (10 - i) * BUCKET_MS) for i in range(6)]
    live = new_message()
    await message_store.put(queue, [*old, live])
    for message in old:
        await message_store.delete(queue, message.message_id)

    sampled: list[Message] = []
    for _ in range(3):  # each call drops the drained buckets it looked at
        sampled = await message_store.sample(queue, 1, now_ms())
        if sampled:
            break

    assert ids(sampled) == {live.message_id}


async def test_count_counts_live_messages_in_every_bucket(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    messages = [new_message(sent_ms=now_ms() - (i % 3) * BUCKET_MS - i) for i in range(30)]
    await message_store.put(queue, messages)
    await message_store.delete(queue, messages[0].message_id)

    assert await message_store.count(queue) == 29


async def test_purge_removes_every_message_but_keeps_later_sends(
    message_store: CassandraMessageStore,
) -> None:
    queue = new_queue()
    before = [new_message(sent_ms=now_ms() - (i % 3) * BUCKET_MS - i) for i in range(20)]
    await message_store.put(queue, before)

    await message_store.purge(queue)
    after = new_message()
    await message_store.put(queue, [after])

    assert await message_store.get(queue, before[0].message_id) is None
    assert await message_store.count(queue) == 1
    assert ids([m for page in await scanned(message_store, queue, 50) for m in page]) == {
        after.message_id
    }


async def test_purge_forgets_the_fifo_deduplication_records(
    message_store: CassandraMessageStore,
) -> None:
    """A refilled cache loads these records: kept past a purge, they would make a send
    repeating a purged message's deduplication id answer with the purged message."""
    queue = dataclasses.replace(
        new_queue(name=f"q-{uuid.uuid4().hex[:10]}.fifo"),
        attributes={"FifoQueue": "true", "MessageRetentionPeriod": "345600"},
    )
    message = new_message()
    await message_store.put(queue, [message])
    await message_store.record_deduplications(
        queue, [Deduplication("d", message.message_id, 1, now_ms() + 300_000),
                Deduplication("g\nd", message.message_id, 1, now_ms() + 300_000)]
    )
    assert sorted(r.key for r in await message_store.deduplications(queue)) == ["d", "g\nd"]
    # several keys at once (a batch, or both DeduplicationScope keys of one send)
    found = await message_store.deduplications(queue, ["d", "g\nd", "unknown"])
    assert sorted(r.key for r in found) == ["d", "g\nd"]

    await message_store.purge(queue)

    assert await message_store.deduplications(queue) == []
    assert await message_store.deduplications(queue, ["d"]) == []


async def test_recreated_queue_sees_none_of_the_old_incarnations_messages(
    message_store: CassandraMessageStore,
) -> None:
    old_queue = new_queue()
    message = new_message()
    await message_store.put(old_queue, [message])

    recreated = new_queue(name=old_queue.name)

    assert await message_store.get(recreated, message.message_id) is None
    assert await message_store.count(recreated) == 0
    assert await scanned(message_store, recreated, 10) == []
    assert await message_store.sample(recreated, 10, now_ms()) == []


async def test_every_store_of_a_keyspace_uses_the_bucket_length_stored_first(
    cassandra_settings: CassandraTestSettings,
) -> None:
    keyspace = unique_keyspace()
    first = await CassandraMessageStore.open(
        cassandra_settings.connection(keyspace), bucket_seconds=60
    )
    session = await connect(cassandra_settings.connection(keyspace))
    second = CassandraMessageStore(session, bucket_seconds=600)  # constructed directly
    try:
        queue = new_queue()
        message = new_message()
        await first.put(queue, [message])

        assert await second.get(queue, message.message_id) == message
        assert second.bucket_seconds == 60
    finally:
        await first.close()
        await session.close()


@pytest.fixture
async def short_lived_node(tmp_path: Path) -> AsyncIterator[EmbeddedCassandra]:
    node = cassandra_under_test(tmp_path / "short-lived-cassandra", heap="512m")
    await asyncio.to_thread(node.start)
    try:
        yield node
    finally:
        await asyncio.to_thread(node.kill)


@pytest.mark.timeout(180)
async def test_calls_fail_with_storage_unavailable_once_cassandra_is_stopped(
    short_lived_node: EmbeddedCassandra,
) -> None:
    keyspace = unique_keyspace()
    connection = CassandraConnection(
        (short_lived_node.contact_point,), keyspace, request_timeout=2.0
    )
    store = await CassandraMessageStore.open(connection)
    catalog = await CassandraQueueCatalog.open(connection)
    queue = new_queue()
    message = new_message()
    await store.put(queue, [message])
    try:
        await asyncio.to_thread(short_lived_node.kill)

        with pytest.raises(StorageUnavailable):
            await store.put(queue, [new_message()])
        with pytest.raises(StorageUnavailable):
            await store.get(queue, message.message_id)
        with pytest.raises(StorageUnavailable):
            await scanned(store, queue, 10)
        with pytest.raises(StorageUnavailable):
            await store.sample(queue, 10, now_ms())
        with pytest.raises(StorageUnavailable):
            await catalog.get(queue.name)
    finally:
        await store.close()
        await catalog.close()


@pytest.mark.timeout(60)
async def test_connecting_to_a_port_where_nothing_listens_fails_with_storage_unavailable(
    tmp_path: Path,
) -> None:
    from cqs.embedded.ports import free_port

    with pytest.raises(StorageUnavailable):
        unreachable = CassandraConnection(
            (f"127.0.0.1:{free_port()}",), unique_keyspace(), request_timeout=2.0
        )
        session: CassandraSession = await connect(unreachable)
        await session.close()


async def test_stores_of_two_keyspaces_on_one_cluster_never_see_each_others_messages(
    cassandra_settings: CassandraTestSettings,
) -> None:
    """Cassandra 1.2 keys prepared statements by their text alone; each keyspace's
    statements must still run against that keyspace."""
    first = await CassandraMessageStore.open(cassandra_settings.connection(unique_keyspace()))
    second = await CassandraMessageStore.open(cassandra_settings.connection(unique_keyspace()))
    try:
        queue = new_queue()
        one, two, three = new_message(), new_message(), new_message()
        # Interleaved, so that each statement is prepared by both stores in turn.
        await first.put(queue, [one])
        await second.put(queue, [two])
        await first.put(queue, [three])
        assert await second.get(queue, two.message_id) == two
        assert await first.get(queue, three.message_id) == three
        assert await second.get(queue, three.message_id) is None
        assert await first.get(queue, two.message_id) is None
        assert set().union(*map(ids, await scanned(first, queue, 10))) == ids([one, three])
        assert set().union(*map(ids, await scanned(second, queue, 10))) == ids([two])
    finally:
        await first.close()
        await second.close()
