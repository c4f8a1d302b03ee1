"""The storage adapters tell their optional observer about every call: backend, server,
operation, duration and success, against the real Redis and Cassandra."""

from __future__ import annotations

from cqs.cassandra_store import connect as connect_cassandra
from cqs.cassandra_store.session import statement_label
from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import QueueIdentity
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.servers import server_label
from tests.fixtures.cassandra_node import CassandraTestSettings

Call = tuple[str, str, str, float, bool]

QUEUE = QueueIdentity("000000000000", "us-east-1", "q")


async def test_redis_calls_are_observed_by_server_and_operation_and_failures_flagged(
    lone_redis: EmbeddedRedis,
) -> None:
    calls: list[Call] = []
    cache = RedisMessageCache(
        [lone_redis.url], down_seconds=0.0, observe=lambda *call: calls.append(call)
    )
    label = server_label(lone_redis.url)
    try:
        await cache.state(QUEUE)
        await cache.begin_fill(QUEUE, "me", 1000)
        await cache.counts(QUEUE, 0)
        assert [(c[0], c[1], c[2], c[4]) for c in calls] == [
            ("redis", label, "get", True),
            ("redis", label, "begin_fill", True),
            ("redis", label, "counts", True),
        ]
        assert all(c[3] >= 0 for c in calls)

        lone_redis.stop()
        calls.clear()
        try:
            await cache.state(QUEUE)
        except StorageUnavailable:
            pass
        assert [(c[0], c[2], c[4]) for c in calls] == [("redis", "get", False)]
    finally:
        await cache.close()


def test_redis_server_labels_leave_passwords_out() -> None:
    assert server_label("redis://:secret@cache-1:6380/2") == "cache-1:6380/2"
    assert server_label("redis://cache-1") == "cache-1:6379/0"


def test_cassandra_statements_are_labelled_by_verb_and_table() -> None:
    assert statement_label("SELECT value FROM cqs.messages WHERE a = ?") == "select messages"
    assert statement_label("INSERT INTO queues (name) VALUES (?)") == "insert queues"
    assert statement_label("UPDATE settings SET v = ? WHERE name = ?") == "update settings"
    assert statement_label("DELETE payload FROM messages WHERE x = ?") == "delete messages"
    assert statement_label("CREATE TABLE x.messages (a int PRIMARY KEY)") == "create"
    assert statement_label(object()) == "batch"


async def test_cassandra_statements_are_observed_with_their_coordinator(
    cassandra_settings: CassandraTestSettings,
) -> None:
    calls: list[Call] = []
    session = await connect_cassandra(
        cassandra_settings.connection(), observe=lambda *call: calls.append(call)
    )
    try:
        calls.clear()
        await session.ping()
        assert [(c[0], c[1], c[2], c[4]) for c in calls] == [
            ("cassandra", cassandra_settings.contact_points[0], "select local", True)
        ]
    finally:
        await session.close()
