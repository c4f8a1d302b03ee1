"""Access decisions while Cassandra cannot answer (a paused JVM of this module's own).

The owner's requests go on with the last copy of the queue's Policy, as the rest of the
service goes on from Redis; another account's request is never decided on a copy older than
METADATA_STALE_SECONDS: it gets the retryable StorageUnavailable until the catalog answers.
"""

from __future__ import annotations

import uuid

import pytest

from cqs.cassandra_store import CassandraConnection, CassandraMessageStore, CassandraQueueCatalog
from cqs.cassandra_store import connect as connect_cassandra
from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import Caller, QueueIdentity, QueueNamespace
from cqs.domain.receipts import ReceiptSigner
from cqs.redis_cache.cache import RedisMessageCache
from cqs.service import QueueService
from cqs.service.queue_directory import METADATA_STALE_SECONDS
from tests.fixtures.manual_clock import ManualClock
from tests.resilience.conftest import CASSANDRA_TIMEOUT_SECONDS, FaultyCassandra

OWNER, OTHER = "444455556666", "111122223333"
REGION = "us-east-1"


async def test_another_account_is_not_decided_on_an_old_policy_while_cassandra_is_away(
    cassandra: FaultyCassandra, message_cache: RedisMessageCache
) -> None:
    session = await connect_cassandra(CassandraConnection(
        (cassandra.contact_point,), f"cqs_access_{uuid.uuid4().hex[:8]}",
        request_timeout=CASSANDRA_TIMEOUT_SECONDS,
    ))
    clock = ManualClock()
    store = await CassandraMessageStore.on_session(session, bucket_seconds=300)
    service = QueueService(
        CassandraQueueCatalog(session), store, message_cache, ReceiptSigner(b"s" * 32),
        home=QueueNamespace(OWNER, REGION), clock=clock,
    )
    owner, other = Caller(OWNER, REGION), Caller(OTHER, REGION)
    try:
        queue = QueueIdentity(OWNER, REGION, f"shared-{uuid.uuid4().hex[:8]}")
        await service.create_queue(queue, {}, {})
        await service.add_permission(queue, "grant", [OTHER], ["SendMessage"])
        await service.access.authorize(other, "SendMessage", queue)

        cassandra.pause()
        try:
            clock.now += METADATA_STALE_SECONDS
            with pytest.raises(StorageUnavailable):
                await service.access.authorize(other, "SendMessage", queue)
            await service.access.authorize(owner, "ReceiveMessage", queue)  # the last copy
        finally:
            cassandra.resume()

        await service.access.authorize(other, "SendMessage", queue)
    finally:
        await service.close()
        await session.close()
