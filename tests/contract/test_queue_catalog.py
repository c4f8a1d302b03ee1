"""Contract of QueueCatalog, run against CassandraQueueCatalog on a real Cassandra node."""

from __future__ import annotations

import asyncio
import os
import uuid

from cqs.cassandra_store import CassandraQueueCatalog
from cqs.model import DEFAULT_QUEUE_ATTRIBUTES, Queue
from tests.fixtures.cassandra_node import CassandraTestSettings, unique_keyspace


def new_queue(name: str | None = None, **attributes: str) -> Queue:
    return Queue(
        name=name or f"q-{uuid.uuid4().hex[:10]}",
        queue_id=str(uuid.uuid4()),
        attributes={**DEFAULT_QUEUE_ATTRIBUTES, **attributes},
        tags={"team": "queues"},
        created_timestamp=1_700_000_000,
        last_modified_timestamp=1_700_000_000,
    )


async def test_created_queue_is_returned_and_found_by_name(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = new_queue(VisibilityTimeout="45")

    created = await queue_catalog.create(queue)

    assert created == queue
    assert await queue_catalog.get(queue.name) == queue


async def test_creating_an_existing_name_returns_the_stored_queue_unchanged(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    original = new_queue(VisibilityTimeout="45")
    await queue_catalog.create(original)

    second = await queue_catalog.create(new_queue(original.name, VisibilityTimeout="99"))

    assert second == original
    assert await queue_catalog.get(original.name) == original


async def test_unknown_queue_is_none(queue_catalog: CassandraQueueCatalog) -> None:
    assert await queue_catalog.get(f"missing-{uuid.uuid4().hex}") is None


async def test_queue_without_tags_reads_back_with_empty_tags(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = Queue(name=f"q-{uuid.uuid4().hex[:10]}", queue_id=str(uuid.uuid4()), attributes={})

    await queue_catalog.create(queue)

    stored = await queue_catalog.get(queue.name)
    assert stored is not None
    assert stored.tags == {}
    assert stored.attributes == {}


async def test_list_names_is_sorted_and_leaves_out_deleted_queues(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    prefix = f"list-{uuid.uuid4().hex[:8]}"
    for suffix in ("c", "a", "b"):
        await queue_catalog.create(new_queue(f"{prefix}-{suffix}"))
    await queue_catalog.delete(f"{prefix}-b")

    names = [name for name in await queue_catalog.list_names() if name.startswith(prefix)]

    assert names == [f"{prefix}-a", f"{prefix}-c"]


async def test_saved_attributes_and_tags_replace_the_old_ones(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = await queue_catalog.create(new_queue())
    changed = Queue(
        name=queue.name,
        queue_id=queue.queue_id,
        attributes={**queue.attributes, "DelaySeconds": "7"},
        tags={"owner": "me"},
        created_timestamp=queue.created_timestamp,
        last_modified_timestamp=queue.created_timestamp + 60,
    )

    await queue_catalog.save(changed)

    assert await queue_catalog.get(queue.name) == changed


async def test_saving_a_deleted_queue_does_not_bring_it_back(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = await queue_catalog.create(new_queue())
    await queue_catalog.delete(queue.name)

    await queue_catalog.save(queue)

    assert await queue_catalog.get(queue.name) is None


async def test_deleted_and_recreated_name_gets_the_new_queue_id(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    first = await queue_catalog.create(new_queue())
    await queue_catalog.delete(first.name)

    second = await queue_catalog.create(new_queue(first.name))

    assert second.queue_id != first.queue_id
    stored = await queue_catalog.get(first.name)
    assert stored is not None
    assert stored.queue_id == second.queue_id


async def test_shared_secret_is_the_first_stored_candidate_for_every_caller(
    cassandra_settings: CassandraTestSettings,
) -> None:
    keyspace = unique_keyspace()
    first = await CassandraQueueCatalog.open(cassandra_settings.connection(keyspace))
    second = await CassandraQueueCatalog.open(cassandra_settings.connection(keyspace))
    try:
        stored = await first.shared_secret(b"first-secret")

        assert stored == b"first-secret"
        assert await second.shared_secret(b"another-secret") == b"first-secret"
    finally:
        await first.close()
        await second.close()


async def test_racing_processes_converge_on_one_shared_secret(
    cassandra_settings: CassandraTestSettings,
) -> None:
    keyspace = unique_keyspace()
    catalogs = [
        await CassandraQueueCatalog.open(cassandra_settings.connection(keyspace))
        for _ in range(4)
    ]
    candidates = [os.urandom(32) for _ in range(12)]
    try:
        secrets = await asyncio.gather(
            *(catalogs[i % 4].shared_secret(candidate) for i, candidate in enumerate(candidates))
        )
    finally:
        for catalog in catalogs:
            await catalog.close()

    assert len(set(secrets)) == 1
    assert secrets[0] in candidates
