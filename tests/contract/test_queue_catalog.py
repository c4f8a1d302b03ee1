"""Contract of QueueCatalog, run against CassandraQueueCatalog on a real Cassandra node."""

from __future__ import annotations

import asyncio
import os
import uuid

from cqs.cassandra_store import CassandraQueueCatalog, CassandraSession
from cqs.cassandra_store.schema import QUEUES_TABLE
from cqs.domain.model import DEFAULT_QUEUE_ATTRIBUTES, Queue, QueueIdentity
from tests.fixtures.cassandra_node import CassandraTestSettings, unique_keyspace

ACCOUNT, REGION = "000000000000", "us-east-1"


def new_queue(
    name: str | None = None,
    *,
    account_id: str = ACCOUNT,
    region: str = REGION,
    **attributes: str,
) -> Queue:
    return Queue(
        account_id=account_id,
        region=region,
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
    assert await queue_catalog.get(queue.identity) == queue


async def test_creating_an_existing_name_returns_the_stored_queue_unchanged(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    original = new_queue(VisibilityTimeout="45")
    await queue_catalog.create(original)

    second = await queue_catalog.create(new_queue(original.name, VisibilityTimeout="99"))

    assert second == original
    assert await queue_catalog.get(original.identity) == original


async def test_unknown_queue_is_none(queue_catalog: CassandraQueueCatalog) -> None:
    assert await queue_catalog.get(QueueIdentity(ACCOUNT, REGION, f"missing-{uuid.uuid4().hex}")) is None


async def test_queue_without_tags_reads_back_with_empty_tags(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = Queue(name=f"q-{uuid.uuid4().hex[:10]}", queue_id=str(uuid.uuid4()), attributes={})

    await queue_catalog.create(queue)

    stored = await queue_catalog.get(queue.identity)
    assert stored is not None
    assert stored.tags == {}
    assert stored.attributes == {}


async def test_list_names_is_sorted_and_leaves_out_deleted_queues(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    prefix = f"list-{uuid.uuid4().hex[:8]}"
    for suffix in ("c", "a", "b"):
        await queue_catalog.create(new_queue(f"{prefix}-{suffix}"))
    await queue_catalog.delete(QueueIdentity(ACCOUNT, REGION, f"{prefix}-b"))

    names = [name for name in await queue_catalog.list_names(ACCOUNT, REGION) if name.startswith(prefix)]

    assert names == [f"{prefix}-a", f"{prefix}-c"]


async def test_saved_attributes_and_tags_replace_the_old_ones(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = await queue_catalog.create(new_queue())
    changed = Queue(
        account_id=queue.account_id,
        region=queue.region,
        name=queue.name,
        queue_id=queue.queue_id,
        attributes={**queue.attributes, "DelaySeconds": "7"},
        tags={"owner": "me"},
        created_timestamp=queue.created_timestamp,
        last_modified_timestamp=queue.created_timestamp + 60,
    )

    await queue_catalog.save(changed)

    assert await queue_catalog.get(queue.identity) == changed


async def test_saving_a_deleted_queue_does_not_bring_it_back(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    queue = await queue_catalog.create(new_queue())
    await queue_catalog.delete(queue.identity)

    await queue_catalog.save(queue)

    assert await queue_catalog.get(queue.identity) is None


async def test_deleted_and_recreated_name_gets_the_new_queue_id(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    first = await queue_catalog.create(new_queue())
    await queue_catalog.delete(first.identity)

    second = await queue_catalog.create(new_queue(first.name))

    assert second.queue_id != first.queue_id
    stored = await queue_catalog.get(first.identity)
    assert stored is not None
    assert stored.queue_id == second.queue_id


async def test_an_insert_right_after_a_delete_of_the_name_is_never_shadowed(
    cassandra_session: CassandraSession,
) -> None:
    """Why the catalog's create inserts once: the driver stamps each write in microseconds
    (protocol v3 and later; 5.0 speaks v5), strictly increasing within the process, so a
    delete and an insert of one name cannot tie (on Cassandra 1.2, protocol v1, the server
    stamped whole milliseconds and a tie went to the tombstone, which the catalog retried
    around). Here 100 deletes and inserts with no pause: none lost."""
    identity = ("000000000000", "us-east-1", f"stamps-{uuid.uuid4().hex[:8]}")
    insert = (
        f"INSERT INTO {QUEUES_TABLE} (account_id, region, name, queue_id) VALUES (?, ?, ?, ?)"
    )
    delete = f"DELETE FROM {QUEUES_TABLE} WHERE account_id = ? AND region = ? AND name = ?"
    select = (
        f"SELECT queue_id, WRITETIME(queue_id) FROM {QUEUES_TABLE}"
        " WHERE account_id = ? AND region = ? AND name = ?"
    )
    stamps: list[int] = []
    lost = 0
    for _ in range(100):
        queue_id = str(uuid.uuid4())
        await cassandra_session.write(insert, [*identity, queue_id])
        [row] = await cassandra_session.read(select, list(identity)) or [None]
        if row is None or row.queue_id != queue_id:
            lost += 1
        else:
            stamps.append(int(row[1]))
        await cassandra_session.write(delete, list(identity))
    assert cassandra_session.protocol_version >= 3
    assert lost == 0
    assert stamps == sorted(set(stamps))  # strictly increasing
    assert sum(stamp % 1000 != 0 for stamp in stamps) > 90  # not whole milliseconds


async def test_the_same_name_in_another_account_or_region_is_another_queue(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    name = f"shared-{uuid.uuid4().hex[:8]}"
    here = await queue_catalog.create(new_queue(name, VisibilityTimeout="10"))
    other_account = await queue_catalog.create(
        new_queue(name, account_id="111122223333", VisibilityTimeout="20")
    )
    other_region = await queue_catalog.create(
        new_queue(name, region="eu-west-1", VisibilityTimeout="30")
    )

    assert len({here.queue_id, other_account.queue_id, other_region.queue_id}) == 3
    await queue_catalog.delete(other_account.identity)
    assert await queue_catalog.get(here.identity) == here
    assert await queue_catalog.get(other_region.identity) == other_region
    assert await queue_catalog.get(other_account.identity) is None
    assert name in await queue_catalog.list_names(ACCOUNT, REGION)
    assert name in await queue_catalog.list_names(ACCOUNT, "eu-west-1")
    assert name not in await queue_catalog.list_names("111122223333", REGION)


async def test_deletion_records_are_kept_per_account_and_region(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    name = f"gone-{uuid.uuid4().hex[:8]}"
    await queue_catalog.record_deletion(QueueIdentity(ACCOUNT, REGION, name), 1_700_000_000_000)

    assert await queue_catalog.deleted_ms(QueueIdentity(ACCOUNT, REGION, name)) == 1_700_000_000_000
    assert await queue_catalog.deleted_ms(QueueIdentity("111122223333", REGION, name)) is None


async def test_listing_pages_through_more_queues_than_one_read_returns(
    cassandra_settings: CassandraTestSettings,
) -> None:
    """Over 1,000 queues in one namespace (one partition, read 1,000 rows at a time) and a
    few in others: both listings return every queue once."""
    catalog = await CassandraQueueCatalog.open(cassandra_settings.connection(unique_keyspace()))
    try:
        crowded = [new_queue(f"q-{index:05d}") for index in range(1_050)]
        elsewhere = [
            new_queue(f"q-{index:05d}", account_id=f"{100000000000 + index}")
            for index in range(30)
        ]
        gate = asyncio.Semaphore(32)

        async def create(queue: Queue) -> None:
            async with gate:
                await catalog.create(queue)

        await asyncio.gather(*(create(queue) for queue in crowded + elsewhere))

        assert await catalog.list_names(ACCOUNT, REGION) == [q.name for q in crowded]
        assert await catalog.list_all() == sorted(q.identity for q in crowded + elsewhere)
    finally:
        await catalog.close()


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


# --- consumer groups (#19) ---------------------------------------------------------------------

async def test_consumer_groups_are_exactly_the_queues_named_queue_slash_group(
    queue_catalog: CassandraQueueCatalog,
) -> None:
    stem = f"cg-{uuid.uuid4().hex[:8]}"
    neighbours = [f"{stem}", f"{stem}-other", f"{stem}0", f"{stem}-other/g", f"{stem}_x/g"]
    groups = [f"{stem}/a", f"{stem}/b-1", f"{stem}/Z_z"]
    for name in neighbours + groups:
        await queue_catalog.create(new_queue(name))
    await queue_catalog.create(new_queue(f"{stem}/elsewhere", account_id="111111111111"))

    found = await queue_catalog.consumer_groups(QueueIdentity(ACCOUNT, REGION, stem))

    assert [queue.name for queue in found] == sorted(groups)
    assert found[0].tags == {"team": "queues"}
    assert await queue_catalog.consumer_groups(QueueIdentity(ACCOUNT, REGION, "none")) == []
