"""The message layouts benchmarks/cassandra_deletes.py drives: what one send-then-delete
loop writes, deletes and reads back, per layout.

`RowDeleteLayout` is a table of the benchmark's own (`naive`: 100 fixed partitions per
queue; `buckets`: partitions per shard and 10 s bucket) with CQL row DELETEs;
`StoreLayout` is the real CassandraMessageStore on the message tables asked for. Both can
read a message's body back by id and list the ids of every row (the store's own `scan`),
for the per-message checks between and after the timed phases.
Imports the Cassandra store and the model; the benchmark script imports this module.
"""

from __future__ import annotations

import uuid
import zlib
from typing import Protocol

from cqs.cassandra_store import (
    CassandraConnection,
    CassandraMessageStore,
    CassandraSession,
    connect,
)
from cqs.cassandra_store.schema import DEFAULT_BUCKET_SECONDS
from cqs.domain.model import Message, Queue

SHARDS = 100
RETENTION_SECONDS = 345_600


class Layout(Protocol):
    async def put(self, message: Message) -> None: ...
    async def delete(self, message_id: str) -> None: ...
    async def body(self, message_id: str) -> str | None: ...
    async def count(self) -> int: ...
    async def ids(self) -> list[str]: ...
    async def close(self) -> None: ...


class RowDeleteLayout:
    """A non-compact table and CQL row DELETEs, optionally with time buckets."""

    def __init__(self, session: CassandraSession, bucket_seconds: int | None) -> None:
        self._session = session
        self._bucket_seconds = bucket_seconds
        self._queue_id = str(uuid.uuid4())

    @classmethod
    async def open(
        cls, contact_point: str, keyspace: str, bucket_seconds: int | None
    ) -> RowDeleteLayout:
        session = await connect(
            CassandraConnection((contact_point,), keyspace, request_timeout=30.0)
        )
        await session.execute(
            "CREATE TABLE bench_rows (queue_id text, bucket bigint, shard int,"
            " message_id timeuuid, body text, sent_ms bigint, visible_at_ms bigint,"
            " PRIMARY KEY ((queue_id, bucket, shard), message_id))"
        )
        return cls(session, bucket_seconds)

    def _key(self, message_id: str) -> list[object]:
        message_uuid = uuid.UUID(message_id)
        bucket = 0
        if self._bucket_seconds:
            ms = (message_uuid.time - 0x01B21DD213814000) // 10_000
            bucket = ms // (self._bucket_seconds * 1000)
        return [self._queue_id, bucket, zlib.crc32(message_uuid.bytes) % SHARDS, message_uuid]

    async def put(self, message: Message) -> None:
        await self._session.write(
            "INSERT INTO bench_rows (queue_id, bucket, shard, message_id, body, sent_ms,"
            f" visible_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL {RETENTION_SECONDS}",
            [*self._key(message.message_id), message.body, message.sent_timestamp_ms,
             message.visible_at_ms],
        )

    async def delete(self, message_id: str) -> None:
        await self._session.write(
            "DELETE FROM bench_rows WHERE queue_id = ? AND bucket = ? AND shard = ?"
            " AND message_id = ?",
            self._key(message_id),
        )

    async def body(self, message_id: str) -> str | None:
        found = await self._session.read(
            "SELECT body FROM bench_rows WHERE queue_id = ? AND bucket = ? AND shard = ?"
            " AND message_id = ?",
            self._key(message_id),
        )
        return str(found[0].body) if found else None

    async def count(self) -> int:
        found = await self._session.read("SELECT count(*) FROM bench_rows LIMIT 100000000", [])
        return int(found[0].count) if found else 0

    async def ids(self) -> list[str]:
        found = await self._session.read(
            "SELECT message_id FROM bench_rows LIMIT 100000000", []
        )
        return [str(row.message_id) for row in found]

    async def close(self) -> None:
        await self._session.close()


class StoreLayout:
    """The real adapter, on the message tables it creates."""

    def __init__(self, store: CassandraMessageStore) -> None:
        self._store = store
        self._queue = Queue(
            name="bench",
            queue_id=str(uuid.uuid4()),
            attributes={"MessageRetentionPeriod": str(RETENTION_SECONDS)},
        )

    @classmethod
    async def open(cls, contact_point: str, keyspace: str) -> StoreLayout:
        connection = CassandraConnection((contact_point,), keyspace, request_timeout=30)
        session = await connect(connection)
        store = await CassandraMessageStore.on_session(
            session, bucket_seconds=DEFAULT_BUCKET_SECONDS, owns_session=True
        )
        return cls(store)

    async def put(self, message: Message) -> None:
        await self._store.put(self._queue, [message])

    async def delete(self, message_id: str) -> None:
        await self._store.delete(self._queue, message_id)

    async def body(self, message_id: str) -> str | None:
        found = await self._store.get(self._queue, message_id)
        return found.body if found else None

    async def count(self) -> int:
        return await self._store.count(self._queue)

    async def ids(self) -> list[str]:
        found: list[str] = []
        async for page in self._store.scan(self._queue, page_size=1000):
            found.extend(message.message_id for message in page)
        return found

    async def close(self) -> None:
        await self._store.close()
