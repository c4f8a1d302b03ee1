"""What cqs decides from the server it connects to, checked on the embedded Cassandra 5.0.

The protocol version is negotiated (v5), the consistency levels follow the keyspace's
replication, the message tables are regular (5.0 refuses compact ones), and a keyspace of
the earlier schema is refused until it is migrated.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from cqs.cassandra_store import (
    CassandraConnection,
    CassandraMessageStore,
    CassandraQueueCatalog,
    KeyspaceNeedsMigration,
    connect,
)
from cqs.domain.model import DEFAULT_QUEUE_ATTRIBUTES, Message, Queue
from cqs.embedded.cassandra5_install import cassandra_version
from tests.fixtures.cassandra_node import CassandraTestSettings, unique_keyspace
from tests.fixtures.legacy_keyspace import compact_tables, create_earlier_keyspace


def new_queue() -> Queue:
    return Queue(
        name=f"q-{uuid.uuid4().hex[:10]}",
        queue_id=str(uuid.uuid4()),
        attributes=dict(DEFAULT_QUEUE_ATTRIBUTES),
    )


def new_message() -> Message:
    sent = int(time.time() * 1000)
    message_id = str(uuid.uuid1())
    return Message(
        message_id=message_id,
        body=f"body of {message_id}",
        md5_of_body="d41d8cd98f00b204e9800998ecf8427e",
        sent_timestamp_ms=sent,
        visible_at_ms=sent,
        sender_id="tester",
    )


def connection(
    settings: CassandraTestSettings, keyspace: str, **options: object
) -> CassandraConnection:
    return CassandraConnection(
        tuple(settings.contact_points), keyspace,
        request_timeout=settings.request_timeout, **options,  # type: ignore[arg-type]
    )


async def test_the_protocol_version_is_negotiated_down_to_the_servers_newest(
    cassandra_settings: CassandraTestSettings,
) -> None:
    """v5 on 5.0 (the driver's newest non-beta version)."""
    session = await connect(connection(cassandra_settings, unique_keyspace()))
    try:
        assert session.release_version == cassandra_version()
        assert session.protocol_version == 5
        await session.ping()
    finally:
        await session.close()


async def test_a_single_replica_keyspace_is_read_and_written_at_one(
    cassandra_settings: CassandraTestSettings,
) -> None:
    session = await connect(connection(cassandra_settings, unique_keyspace()))
    try:
        assert session.consistency == ("ONE", "ONE")
    finally:
        await session.close()


@pytest.mark.parametrize(
    ("replication", "expected"),
    [
        ({"class": "SimpleStrategy", "replication_factor": 3}, "LOCAL_QUORUM"),
        ({"class": "NetworkTopologyStrategy", "datacenter1": 3}, "LOCAL_QUORUM"),
    ],
)
async def test_a_replicated_keyspace_defaults_to_a_quorum_the_server_accepts(
    cassandra_settings: CassandraTestSettings, replication: dict[str, object], expected: str
) -> None:
    session = await connect(
        connection(cassandra_settings, unique_keyspace(), replication=replication)
    )
    try:
        assert session.consistency == (expected, expected)
    finally:
        await session.close()


async def test_consistency_levels_that_are_set_are_used_as_set(
    cassandra_settings: CassandraTestSettings,
) -> None:
    replication = {"class": "NetworkTopologyStrategy", "datacenter1": 1}
    session = await connect(
        connection(
            cassandra_settings, unique_keyspace(), replication=replication,
            read_consistency="local_quorum", write_consistency="ALL",
        )
    )
    try:
        assert session.consistency == ("LOCAL_QUORUM", "ALL")
        catalog = CassandraQueueCatalog(session)
        queue = new_queue()
        await catalog.create(queue)
        assert await catalog.get(queue.identity) == queue
    finally:
        await session.close()


async def test_an_unknown_consistency_level_fails_before_connecting(
    cassandra_settings: CassandraTestSettings,
) -> None:
    with pytest.raises(ValueError, match="consistency"):
        await connect(
            connection(cassandra_settings, unique_keyspace(), read_consistency="MOSTLY")
        )


async def test_every_table_is_created_as_a_regular_table(
    cassandra_settings: CassandraTestSettings,
) -> None:
    """Cassandra 4.0 and later refuse compact tables: none is created, and messages are
    stored and deleted in the regular ones."""
    keyspace = unique_keyspace()
    session = await connect(connection(cassandra_settings, keyspace))
    store = await CassandraMessageStore.on_session(session, bucket_seconds=300, owns_session=True)
    try:
        queue, message = new_queue(), new_message()
        await store.put(queue, [message])
        await store.delete(queue, message.message_id)
        assert await store.get(queue, message.message_id) is None
        assert await store.count(queue) == 0
    finally:
        await store.close()
    contact_point = cassandra_settings.contact_points[0]
    assert await asyncio.to_thread(compact_tables, contact_point, keyspace) == set()


async def test_a_keyspace_of_the_earlier_schema_is_refused_until_it_is_migrated(
    cassandra_settings: CassandraTestSettings,
) -> None:
    """Its queues are keyed by name alone: served as it is, every queue would be missing."""
    keyspace = unique_keyspace("cqs_earlier")
    contact_point = cassandra_settings.contact_points[0]
    await asyncio.to_thread(create_earlier_keyspace, contact_point, keyspace, "regular")

    with pytest.raises(KeyspaceNeedsMigration, match="cqs migrate"):
        await CassandraMessageStore.open(connection(cassandra_settings, keyspace))

