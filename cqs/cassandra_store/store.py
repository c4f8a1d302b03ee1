"""CassandraMessageStore: the durable `MessageStore`, over shard x time-bucket partitions.

Owns message reads and writes, the bucket index, and dropping drained buckets. Buckets and
shards never leave this module (the port speaks of queues and message ids only). Imports
`cqs.model`, `cqs.errors` and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.session import DEFAULT_REPLICATION, CassandraSession, Row, connect
from cqs.model import Deduplication, Message, Queue

BUCKET_SECONDS_SETTING = "messages.bucket_seconds"
# A bucket is closed (no more writes expected) this long after its end: covers clock skew
# between API processes and the time between creating a message id and writing it.
DEFAULT_CLOSED_BUCKET_SLACK_SECONDS = 120
# Buckets and shards one `sample` call may look at: it must stay cheap.
SAMPLE_BUCKETS = 4
SAMPLE_SHARDS = 10
# Bucket registrations remembered per queue (the newest ones; older ones are rarely written).
_REMEMBERED_BUCKETS = 8
_NO_LIMIT = 100_000_000  # CQL 3.0 silently applies LIMIT 10000 when none is given


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
        self._bucket_seconds = bucket_seconds
        self._shard_count = shard_count
        self._all_shards = list(range(shard_count))
        self._closed_slack_ms = closed_bucket_slack_seconds * 1000
        self._owns_session = owns_session
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._layout_agreed = False
        self._layout_lock = asyncio.Lock()
        # queue_id -> {bucket: TTL its index entry was written with}, by this process
        self._registered: dict[str, dict[int, int]] = {}

    @classmethod
    async def open(
        cls,
        contact_points: Sequence[str],
        keyspace: str,
        replication: str | Mapping[str, str | int] = DEFAULT_REPLICATION,
        protocol_version: int = 1,
        read_consistency: str = "ONE",
        write_consistency: str = "ONE",
        request_timeout: float = 5.0,
        bucket_seconds: int = schema.DEFAULT_BUCKET_SECONDS,
        message_gc_grace_seconds: int = schema.DEFAULT_MESSAGE_GC_GRACE_SECONDS,
    ) -> CassandraMessageStore:
        """Connect with a session of its own (closed by `close()`)."""
        session = await connect(
            contact_points,
            keyspace,
            replication=replication,
            protocol_version=protocol_version,
            read_consistency=read_consistency,
            write_consistency=write_consistency,
            request_timeout=request_timeout,
            message_gc_grace_seconds=message_gc_grace_seconds,
        )
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
        await store._agree_on_layout()
        return store

    async def _agree_on_layout(self) -> None:
        """Adopt the bucket length stored for the keyspace (ours, if we are first).

        Runs once, before the first operation: a store constructed directly is safe too.
        """
        if self._layout_agreed:
            return
        async with self._layout_lock:
            if not self._layout_agreed:
                agreed = await self._session.agreed_setting(
                    BUCKET_SECONDS_SETTING, str(int(self._bucket_seconds)).encode("ascii")
                )
                self._bucket_seconds = int(agreed.decode("ascii"))
                self._layout_agreed = True

    @property
    def bucket_seconds(self) -> int:
        """The bucket length in use (the agreed one once any operation has run)."""
        return self._bucket_seconds

    # --- MessageStore --------------------------------------------------------------------

    async def put(self, queue: Queue, messages: Sequence[Message]) -> None:
        await self._agree_on_layout()
        ttl = max(1, queue.retention_seconds)
        insert = (
            f"INSERT INTO {schema.MESSAGES_TABLE} (queue_id, bucket, shard, message_id, payload)"
            f" VALUES (?, ?, ?, ?, ?) USING TTL {ttl}"  # CQL 3.0 has no bind marker for TTL
        )
        located: list[tuple[uuid.UUID, rows.MessageLocation, Message]] = []
        for message in messages:
            message_uuid = rows.parse_message_id(message.message_id)
            if message_uuid is None:
                raise ValueError(f"message id {message.message_id!r} is not a version-1 UUID")
            located.append((message_uuid, self._locate(message_uuid), message))
        writes: list[Awaitable[None]] = [
            self._write(
                insert,
                [queue.queue_id, location.bucket, location.shard, message_uuid,
                 rows.encode_payload(message)],
            )
            for message_uuid, location, message in located
        ]
        buckets = {location.bucket for _, location, _ in located}
        registered = self._registered.setdefault(queue.queue_id, {})
        index_ttl = ttl + self._bucket_seconds + self._closed_slack_ms // 1000
        new_buckets = [bucket for bucket in buckets if registered.get(bucket, 0) < index_ttl]
        for bucket in new_buckets:
            writes.append(self._register_bucket(queue.queue_id, bucket, index_ttl))
        await _all_or_first_error(writes)
        for bucket in new_buckets:
            registered[bucket] = index_ttl
        for bucket in sorted(registered)[:-_REMEMBERED_BUCKETS]:
            del registered[bucket]

    async def delete(self, queue: Queue, message_id: str) -> None:
        await self._agree_on_layout()
        message_uuid = rows.parse_message_id(message_id)
        if message_uuid is None:
            return
        location = self._locate(message_uuid)
        # One cell tombstone (COMPACT STORAGE): cheap however many deletes the bucket takes.
        await self._write(
            f"DELETE FROM {schema.MESSAGES_TABLE}"
            " WHERE queue_id = ? AND bucket = ? AND shard = ? AND message_id = ?",
            [queue.queue_id, location.bucket, location.shard, message_uuid],
        )

    async def get(self, queue: Queue, message_id: str) -> Message | None:
        await self._agree_on_layout()
        message_uuid = rows.parse_message_id(message_id)
        if message_uuid is None:
            return None
        location = self._locate(message_uuid)
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
        await self._agree_on_layout()
        for bucket in await self._buckets(queue.queue_id):
            found_any = False
            async for page in self._scan_bucket(queue.queue_id, bucket, page_size):
                found_any = True
                yield page
            if not found_any and self._is_closed(bucket):
                await self._drop_bucket(queue.queue_id, bucket)

    async def sample(self, queue: Queue, limit: int, now_ms: int) -> list[Message]:
        """Deliverable messages from the oldest few buckets, random shards first.

        Per bucket: one read of `SAMPLE_SHARDS` random shards, and when that finds too few,
        one read over every shard (a small queue has most shards empty). At most
        `SAMPLE_BUCKETS` buckets, each read bounded by LIMIT, whatever the queue holds.
        """
        if limit < 1:
            return []
        await self._agree_on_layout()
        found: list[Message] = []
        row_limit = max(3 * limit, 30)
        oldest = await self._session.read(
            f"SELECT bucket FROM {schema.MESSAGE_BUCKETS_TABLE}"
            f" WHERE queue_id = ? LIMIT {SAMPLE_BUCKETS}",
            [queue.queue_id],
        )
        for index_row in oldest:
            bucket = int(index_row.bucket)
            chosen = random.sample(self._all_shards, min(SAMPLE_SHARDS, self._shard_count))
            candidates = await self._read_shards(queue.queue_id, bucket, chosen, row_limit)
            seen = {message.message_id for message in found}
            found.extend(_deliverable(candidates, now_ms, seen))
            if len(found) >= limit:
                break
            chosen_set = set(chosen)
            others = [shard for shard in self._all_shards if shard not in chosen_set]
            more = await self._read_shards(queue.queue_id, bucket, others, row_limit)
            found.extend(_deliverable(more, now_ms, seen))
            if len(found) >= limit:
                break
            if not candidates and not more and self._is_closed(bucket):
                await self._drop_bucket(queue.queue_id, bucket)  # drained: stop reading it
        return found[:limit]

    async def count(self, queue: Queue) -> int:
        await self._agree_on_layout()
        markers = ", ".join("?" * self._shard_count)
        cql = (
            f"SELECT count(*) FROM {schema.MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers}) LIMIT {_NO_LIMIT}"
        )

        async def count_bucket(bucket: int) -> int:
            result = await self._session.read(cql, [queue.queue_id, bucket, *self._all_shards])
            counted = int(result[0].count) if result else 0
            if counted == 0 and self._is_closed(bucket):
                await self._drop_bucket(queue.queue_id, bucket)
            return counted

        counts = await asyncio.gather(
            *(count_bucket(bucket) for bucket in await self._buckets(queue.queue_id))
        )
        return sum(counts)

    async def purge(self, queue: Queue) -> None:
        """Drop every bucket partition; keep the index entries of buckets still being written.

        A message written into an open bucket after the purge stays reachable, because other
        processes remember that bucket as registered and will not register it again.
        """
        await self._agree_on_layout()
        await _all_or_first_error(
            [self._drop_bucket(queue.queue_id, bucket, keep_index=not self._is_closed(bucket))
             for bucket in await self._buckets(queue.queue_id)]
        )

    async def record_deduplications(
        self, queue: Queue, records: Sequence[Deduplication]
    ) -> None:
        insert = (
            f"INSERT INTO {schema.FIFO_DEDUPLICATIONS_TABLE}"
            " (queue_id, dedup_key, message_id, sequence, expires_ms) VALUES (?, ?, ?, ?, ?)"
            f" USING TTL {schema.DEDUPLICATION_TTL_SECONDS}"
        )
        await _all_or_first_error(
            [
                self._write(
                    insert,
                    [queue.queue_id, record.key, record.message_id, record.sequence_number,
                     record.expires_ms],
                )
                for record in records
            ]
        )

    async def deduplications(
        self, queue: Queue, keys: Sequence[str] | None = None
    ) -> list[Deduplication]:
        columns = "dedup_key, message_id, sequence, expires_ms"
        if keys is None:
            found = await self._session.read(
                f"SELECT {columns} FROM {schema.FIFO_DEDUPLICATIONS_TABLE}"
                f" WHERE queue_id = ? LIMIT {_NO_LIMIT}",
                [queue.queue_id],
            )
        elif not keys:
            return []
        else:
            unique = sorted(set(keys))
            markers = ", ".join("?" * len(unique))
            found = await self._session.read(
                f"SELECT {columns} FROM {schema.FIFO_DEDUPLICATIONS_TABLE}"
                f" WHERE queue_id = ? AND dedup_key IN ({markers})",
                [queue.queue_id, *unique],
            )
        now_ms = self._clock_ms()
        return [
            Deduplication(row.dedup_key, row.message_id, int(row.sequence), int(row.expires_ms))
            for row in found
            if int(row.expires_ms) > now_ms
        ]

    async def drop(self, queue: Queue) -> None:
        """Drop every bucket partition and every index entry of a deleted queue.

        Unlike `purge`, nothing of the queue incarnation is kept: no process writes to a
        deleted queue's id again (a re-created name gets a new id).
        """
        await self._agree_on_layout()
        await _all_or_first_error(
            [self._drop_bucket(queue.queue_id, bucket, keep_index=False)
             for bucket in await self._buckets(queue.queue_id)]
        )
        if queue.fifo:
            await self._write(
                f"DELETE FROM {schema.FIFO_DEDUPLICATIONS_TABLE} WHERE queue_id = ?",
                [queue.queue_id],
            )
        self._registered.pop(queue.queue_id, None)

    async def close(self) -> None:
        if self._owns_session:
            await self._session.close()

    # --- layout --------------------------------------------------------------------------

    def _locate(self, message_uuid: uuid.UUID) -> rows.MessageLocation:
        return rows.message_location(message_uuid, self._bucket_seconds, self._shard_count)

    def _is_closed(self, bucket: int) -> bool:
        """No process should write into the bucket any more."""
        end_ms = rows.bucket_end_ms(bucket, self._bucket_seconds)
        return end_ms + self._closed_slack_ms < self._clock_ms()

    async def _buckets(self, queue_id: str) -> list[int]:
        index = await self._session.read(
            f"SELECT bucket FROM {schema.MESSAGE_BUCKETS_TABLE}"
            f" WHERE queue_id = ? LIMIT {_NO_LIMIT}",
            [queue_id],
        )
        return [int(row.bucket) for row in index]

    async def _register_bucket(self, queue_id: str, bucket: int, ttl: int) -> None:
        await self._write(
            f"INSERT INTO {schema.MESSAGE_BUCKETS_TABLE} (queue_id, bucket, registered_ms)"
            f" VALUES (?, ?, ?) USING TTL {ttl}",
            [queue_id, bucket, self._clock_ms()],
        )

    async def _scan_bucket(
        self, queue_id: str, bucket: int, page_size: int
    ) -> AsyncIterator[list[Message]]:
        """Pages of one bucket: an IN over the remaining shards, then resume inside a shard.

        Protocol v1 has no driver paging; a multi-partition IN returns partitions in the
        order listed, each in clustering order, so (shard, last id) is a resume point.
        """
        position = 0
        after: uuid.UUID | None = None
        while position < self._shard_count:
            if after is None:
                page = await self._read_rows(
                    queue_id, bucket, self._all_shards[position:], page_size
                )
            else:
                page = await self._session.read(
                    f"SELECT shard, message_id, payload FROM {schema.MESSAGES_TABLE}"
                    " WHERE queue_id = ? AND bucket = ? AND shard = ? AND message_id > ?"
                    f" LIMIT {page_size}",
                    [queue_id, bucket, self._all_shards[position], after],
                )
            if page:
                yield [rows.message_from_row(row.message_id, row.payload) for row in page]
            if len(page) < page_size:
                if after is None:
                    return  # every remaining shard answered in full
                position, after = position + 1, None
            else:
                position, after = int(page[-1].shard), page[-1].message_id

    async def _read_rows(
        self, queue_id: str, bucket: int, shards: Sequence[int], limit: int
    ) -> list[Row]:
        markers = ", ".join("?" * len(shards))
        return await self._session.read(
            f"SELECT shard, message_id, payload FROM {schema.MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers}) LIMIT {limit}",
            [queue_id, bucket, *shards],
        )

    async def _read_shards(
        self, queue_id: str, bucket: int, shards: Sequence[int], limit: int
    ) -> list[Message]:
        found = await self._read_rows(queue_id, bucket, sorted(shards), limit)
        return [rows.message_from_row(row.message_id, row.payload) for row in found]

    async def _drop_bucket(self, queue_id: str, bucket: int, keep_index: bool = False) -> None:
        """One partition tombstone per shard, then the index entry (so a crash can retry)."""
        markers = ", ".join("?" * self._shard_count)
        await self._write(
            f"DELETE FROM {schema.MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers})",
            [queue_id, bucket, *self._all_shards],
        )
        if keep_index:
            return
        await self._write(
            f"DELETE FROM {schema.MESSAGE_BUCKETS_TABLE} WHERE queue_id = ? AND bucket = ?",
            [queue_id, bucket],
        )
        self._registered.get(queue_id, {}).pop(bucket, None)

    async def _write(self, cql: str, parameters: Sequence[Any]) -> None:
        await self._session.write(cql, parameters)

    # --- for operators (read only) ---------------------------------------------------------

    async def browse(
        self, queue: Queue, after: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        """`scan` order, resumable: the position is (bucket, shard, last message id)."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        await self._agree_on_layout()
        start = _read_browse_position(after)
        found: list[Message] = []
        for bucket in await self._buckets(queue.queue_id):
            if start is not None and bucket < start[0]:
                continue
            resuming = start is not None and bucket == start[0]
            shard, last = (start[1], start[2]) if start is not None and resuming else (0, None)
            while shard < self._shard_count:
                wanted = limit - len(found)
                if last is None:
                    page = await self._read_rows(
                        queue.queue_id, bucket, self._all_shards[shard:], wanted
                    )
                else:
                    page = await self._session.read(
                        f"SELECT shard, message_id, payload FROM {schema.MESSAGES_TABLE}"
                        " WHERE queue_id = ? AND bucket = ? AND shard = ? AND message_id > ?"
                        f" LIMIT {wanted}",
                        [queue.queue_id, bucket, shard, last],
                    )
                found.extend(rows.message_from_row(row.message_id, row.payload) for row in page)
                if len(page) == wanted:
                    position = _browse_position(bucket, int(page[-1].shard), page[-1].message_id)
                    return found, position
                shard, last = (self._shard_count, None) if last is None else (shard + 1, None)
        return found, None

    async def describe(self) -> dict[str, str]:
        local = await self._session.read(
            "SELECT cluster_name, release_version, data_center, partitioner FROM system.local"
        )
        peers = await self._session.read("SELECT peer FROM system.peers")
        described = {
            "nodes": str(1 + len(peers)),
            "bucket_seconds": str(self._bucket_seconds),
            "shards": str(self._shard_count),
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


async def _all_or_first_error(calls: Sequence[Awaitable[None]]) -> None:
    """Run every call to completion; then raise the first failure, if any."""
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


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
