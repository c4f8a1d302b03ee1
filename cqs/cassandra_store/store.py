"""CassandraMessageStore: the durable `MessageStore`, over shard x time-bucket partitions.

Owns the `MessageStore` operations on messages: writes, reads, samples, counts, purges and
drops, plus the operators' browse and describe. Where a message lives and the bucket index
are `partitions.py`'s; FIFO deduplication records, `deduplications.py`'s; delivery claims,
`claims.py`'s. Buckets and
shards never leave this package (the port speaks of queues and message ids only). Imports
`cqs.domain.model`, `cqs.domain.errors` and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from cqs.cassandra_store import claims, rows, schema
from cqs.cassandra_store.batches import MessageRowWriter, RowValues
from cqs.cassandra_store.connection import CassandraConnection, connect
from cqs.cassandra_store.deduplications import (
    drop_deduplications,
    read_deduplications,
    record_deduplications,
)
from cqs.cassandra_store.partitions import NO_LIMIT, MessagePartitions
from cqs.cassandra_store.session import CassandraSession, all_or_first_error
from cqs.domain.model import Deduplication, Message, Queue

# A bucket is closed (no more writes expected) this long after its end: covers clock skew
# between API processes and the time between creating a message id and writing it.
DEFAULT_CLOSED_BUCKET_SLACK_SECONDS = 120
# Buckets and shards one `sample` call may look at: it must stay cheap.
SAMPLE_BUCKETS = 4
SAMPLE_SHARDS = 10


class CassandraMessageStore:
    """Messages in (queue_id, bucket, shard) partitions, clustered by their version-1 UUID.

    `bucket_seconds` is part of the data layout: every process must use the same value, so
    before its first operation the store records its value for the keyspace unless one is
    stored already, and adopts the stored one.
    """

    def __init__(
        self,
        session: CassandraSession,
        *,
        bucket_seconds: int = schema.DEFAULT_BUCKET_SECONDS,
        shard_count: int = schema.SHARD_COUNT,
        closed_bucket_slack_seconds: int = DEFAULT_CLOSED_BUCKET_SLACK_SECONDS,
        owns_session: bool = False,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self._session = session
        self._owns_session = owns_session
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._rows = MessageRowWriter(session)
        self._partitions = MessagePartitions(
            session,
            bucket_seconds=bucket_seconds,
            shard_count=shard_count,
            closed_bucket_slack_seconds=closed_bucket_slack_seconds,
            clock_ms=self._clock_ms,
        )

    @classmethod
    async def open(
        cls, connection: CassandraConnection, *, bucket_seconds: int = schema.DEFAULT_BUCKET_SECONDS
    ) -> CassandraMessageStore:
        """Connect with a session of its own (closed by `close()`)."""
        session = await connect(connection)
        try:
            return await cls.on_session(session, bucket_seconds=bucket_seconds, owns_session=True)
        except BaseException:
            await session.close()
            raise

    @classmethod
    async def on_session(
        cls, session: CassandraSession, *, bucket_seconds: int, owns_session: bool = False
    ) -> CassandraMessageStore:
        """A store on an existing session, using the keyspace's agreed bucket length."""
        store = cls(session, bucket_seconds=bucket_seconds, owns_session=owns_session)
        await store._partitions.agree_on_layout()
        return store

    @property
    def bucket_seconds(self) -> int:
        """The bucket length in use (the agreed one once any operation has run)."""
        return self._partitions.bucket_seconds

    # --- MessageStore --------------------------------------------------------------------

    async def put(
        self, queue: Queue, messages: Sequence[Message], *, keep_seconds: int | None = None
    ) -> None:
        await self._partitions.agree_on_layout()
        ttl = max(1, queue.retention_seconds if keep_seconds is None else keep_seconds)
        rows_to_write: list[RowValues] = []
        buckets: set[int] = set()
        for message in messages:
            message_uuid = rows.parse_message_id(message.message_id)
            if message_uuid is None:
                raise ValueError(f"message id {message.message_id!r} is not a version-1 UUID")
            location = self._partitions.locate(message_uuid)
            buckets.add(location.bucket)
            payload = rows.encode_payload(message)
            rows_to_write.append(
                ([queue.queue_id, location.bucket, location.shard, message_uuid, payload],
                 len(payload))
            )
        writes: list[Awaitable[None]] = [self._rows.insert(ttl, rows_to_write)]
        index_ttl = self._partitions.index_ttl(ttl)
        new_buckets = self._partitions.unregistered(queue.queue_id, buckets, index_ttl)
        for bucket in new_buckets:
            writes.append(self._partitions.register_bucket(queue.queue_id, bucket, index_ttl))
        await all_or_first_error(writes)
        self._partitions.remember_registered(queue.queue_id, new_buckets, index_ttl)

    async def delete(self, queue: Queue, message_id: str) -> None:
        await self.delete_many(queue, [message_id])

    async def delete_many(self, queue: Queue, message_ids: Sequence[str]) -> None:
        await self._partitions.agree_on_layout()
        keys: list[RowValues] = []
        for message_id in message_ids:
            message_uuid = rows.parse_message_id(message_id)
            if message_uuid is not None:
                location = self._partitions.locate(message_uuid)
                keys.append(
                    ([queue.queue_id, location.bucket, location.shard, message_uuid], 0)
                )
        await self._rows.delete(keys)

    async def get(self, queue: Queue, message_id: str) -> Message | None:
        await self._partitions.agree_on_layout()
        message_uuid = rows.parse_message_id(message_id)
        if message_uuid is None:
            return None
        location = self._partitions.locate(message_uuid)
        found = await self._session.read(
            f"SELECT payload FROM {schema.MESSAGES_TABLE}"
            " WHERE queue_id = ? AND bucket = ? AND shard = ? AND message_id = ?",
            [queue.queue_id, location.bucket, location.shard, message_uuid],
        )
        return rows.message_from_row(message_uuid, found[0].payload) if found else None

    async def scan(self, queue: Queue, page_size: int) -> AsyncIterator[list[Message]]:
        """Bucket by bucket, oldest first; within a bucket shard by shard, oldest first.

        Drops buckets found empty once they are closed.
        """
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        await self._partitions.agree_on_layout()
        for bucket in await self._partitions.buckets(queue.queue_id):
            found_any = False
            async for page in self._partitions.scan_bucket(queue.queue_id, bucket, page_size):
                found_any = True
                yield page
            if not found_any and self._partitions.is_closed(bucket):
                await self._partitions.drop_bucket(queue.queue_id, bucket)

    async def sample(self, queue: Queue, limit: int, now_ms: int) -> list[Message]:
        """Deliverable messages from the oldest few buckets, random shards first.

        Per bucket: one read of `SAMPLE_SHARDS` random shards, and when that finds too few,
        one read over every shard (a small queue has most shards empty). At most
        `SAMPLE_BUCKETS` buckets, each read bounded by LIMIT, whatever the queue holds.
        """
        if limit < 1:
            return []
        partitions = self._partitions
        await partitions.agree_on_layout()
        found: list[Message] = []
        row_limit = max(3 * limit, 30)
        oldest = await self._session.read(
            f"SELECT bucket FROM {schema.MESSAGE_BUCKETS_TABLE}"
            f" WHERE queue_id = ? LIMIT {SAMPLE_BUCKETS}",
            [queue.queue_id],
        )
        for index_row in oldest:
            bucket = int(index_row.bucket)
            shard_count = min(SAMPLE_SHARDS, partitions.shard_count)
            chosen = random.sample(partitions.all_shards, shard_count)
            candidates = await partitions.read_messages(queue.queue_id, bucket, chosen, row_limit)
            seen = {message.message_id for message in found}
            found.extend(_deliverable(candidates, now_ms, seen))
            if len(found) >= limit:
                break
            chosen_set = set(chosen)
            others = [shard for shard in partitions.all_shards if shard not in chosen_set]
            more = await partitions.read_messages(queue.queue_id, bucket, others, row_limit)
            found.extend(_deliverable(more, now_ms, seen))
            if len(found) >= limit:
                break
            if not candidates and not more and partitions.is_closed(bucket):
                await partitions.drop_bucket(queue.queue_id, bucket)  # drained: stop reading it
        return found[:limit]

    async def count(self, queue: Queue) -> int:
        partitions = self._partitions
        await partitions.agree_on_layout()
        markers = ", ".join("?" * partitions.shard_count)
        cql = (
            f"SELECT count(*) FROM {schema.MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers}) LIMIT {NO_LIMIT}"
        )

        async def count_bucket(bucket: int) -> int:
            result = await self._session.read(cql, [queue.queue_id, bucket, *partitions.all_shards])
            counted = int(result[0].count) if result else 0
            if counted == 0 and partitions.is_closed(bucket):
                await partitions.drop_bucket(queue.queue_id, bucket)
            return counted

        counts = await asyncio.gather(
            *(count_bucket(bucket) for bucket in await partitions.buckets(queue.queue_id))
        )
        return sum(counts)

    async def purge(self, queue: Queue) -> None:
        """Drop every bucket partition; keep the index entries of buckets still being written.

        A message written into an open bucket after the purge stays reachable, because other
        processes remember that bucket as registered and will not register it again. A FIFO
        queue's deduplication records go too: SQS forgets a purged message's deduplication
        id, so a refilled cache must not load it back.
        """
        partitions = self._partitions
        await partitions.agree_on_layout()
        await all_or_first_error(
            [
                partitions.drop_bucket(
                    queue.queue_id, bucket, keep_index=not partitions.is_closed(bucket)
                )
                for bucket in await partitions.buckets(queue.queue_id)
            ]
        )
        if queue.fifo:
            await drop_deduplications(self._session, queue)

    async def record_deduplications(
        self, queue: Queue, records: Sequence[Deduplication]
    ) -> None:
        await record_deduplications(self._session, queue, records)

    async def deduplications(
        self, queue: Queue, keys: Sequence[str] | None = None
    ) -> list[Deduplication]:
        return await read_deduplications(self._session, queue, keys, self._clock_ms)

    async def claim(
        self, queue: Queue, message_ids: Sequence[str], hidden_until_ms: int, now_ms: int
    ) -> set[str]:
        return await claims.claim(self._session, queue, message_ids, hidden_until_ms, now_ms)

    async def renew_claim(
        self, queue: Queue, message_id: str, hidden_until_ms: int, now_ms: int
    ) -> None:
        await claims.renew_claim(self._session, queue, message_id, hidden_until_ms, now_ms)

    async def claims(
        self, queue: Queue, now_ms: int, message_ids: Sequence[str] | None = None
    ) -> dict[str, int]:
        return await claims.claims(self._session, queue, now_ms, message_ids)

    async def drop(self, queue: Queue) -> None:
        """Drop every bucket partition and every index entry of a deleted queue.

        Unlike `purge`, nothing of the queue incarnation is kept: no process writes to a
        deleted queue's id again (a re-created name gets a new id).
        """
        partitions = self._partitions
        await partitions.agree_on_layout()
        await all_or_first_error(
            [partitions.drop_bucket(queue.queue_id, bucket, keep_index=False)
             for bucket in await partitions.buckets(queue.queue_id)]
        )
        if queue.fifo:
            await drop_deduplications(self._session, queue)
        self._partitions.forget_queue(queue.queue_id)

    async def close(self) -> None:
        if self._owns_session:
            await self._session.close()

    # --- for operators (read only) ---------------------------------------------------------

    async def browse(
        self, queue: Queue, after: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        """`scan` order, resumable: the position is (bucket, shard, last message id)."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        partitions = self._partitions
        await partitions.agree_on_layout()
        start = _read_browse_position(after)
        found: list[Message] = []
        for bucket in await partitions.buckets(queue.queue_id):
            if start is not None and bucket < start[0]:
                continue
            resuming = start is not None and bucket == start[0]
            shard, last = (start[1], start[2]) if start is not None and resuming else (0, None)
            while shard < partitions.shard_count:
                wanted = limit - len(found)
                if last is None:
                    page = await partitions.read_rows(
                        queue.queue_id, bucket, partitions.all_shards[shard:], wanted
                    )
                else:
                    page = await partitions.read_rows_after(
                        queue.queue_id, bucket, shard, last, wanted
                    )
                found.extend(rows.message_from_row(row.message_id, row.payload) for row in page)
                if len(page) == wanted:
                    position = _browse_position(bucket, int(page[-1].shard), page[-1].message_id)
                    return found, position
                shard, last = (partitions.shard_count, None) if last is None else (shard + 1, None)
        return found, None

    async def describe(self) -> dict[str, str]:
        local = await self._session.read(
            "SELECT cluster_name, release_version, data_center, partitioner FROM system.local"
        )
        peers = await self._session.read("SELECT peer FROM system.peers")
        described = {
            "nodes": str(1 + len(peers)),
            "bucket_seconds": str(self._partitions.bucket_seconds),
            "shards": str(self._partitions.shard_count),
        }
        if local:
            for column in ("cluster_name", "release_version", "data_center", "partitioner"):
                value = getattr(local[0], column, None)
                if value is not None:
                    described[column] = str(value)
        return described


def _deliverable(messages: list[Message], now_ms: int, seen: set[str]) -> list[Message]:
    chosen = [m for m in messages if m.visible_at_ms <= now_ms and m.message_id not in seen]
    seen.update(message.message_id for message in chosen)
    return chosen


def _browse_position(bucket: int, shard: int, last: uuid.UUID) -> str:
    return f"{bucket}.{shard}.{last}"


def _read_browse_position(position: str | None) -> tuple[int, int, uuid.UUID] | None:
    if not position:
        return None
    try:
        bucket, shard, last = position.split(".")
        return int(bucket), int(shard), uuid.UUID(last)
    except ValueError as exc:
        raise ValueError(f"not a browse position: {position!r}") from exc

