"""The message partitions of a keyspace: (queue_id, bucket, shard), and the bucket index.

Owns the data layout behind `CassandraMessageStore`: where a message id lives (its time
bucket and shard), the agreement of every process on the bucket length, the index of a
queue's buckets (registering new ones, remembering recent registrations), reading rows
across shards in resumable pages, and dropping a bucket; also the read of one queue's
partition of a small per-queue table (`read_queue_partition`). Buckets and shards never
leave this package. Imports `cqs.domain.model` and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.session import CassandraSession, Row
from cqs.domain.model import Message

T = TypeVar("T")

BUCKET_SECONDS_SETTING = "messages.bucket_seconds"
# Bucket registrations remembered per queue (the newest ones; older ones are rarely written).
_REMEMBERED_BUCKETS = 8
NO_LIMIT = 100_000_000  # CQL 3.0 silently applies LIMIT 10000 when none is given


async def read_queue_partition(
    session: CassandraSession,
    table: str,
    columns: str,
    queue_id: str,
    key_column: str,
    keys: Sequence[str] | None,
) -> list[Row]:
    """`columns` of the queue's rows of `table` (partition key `queue_id`, clustering key
    `key_column`): all of them, or those whose key is among `keys` (a batch's few); one
    read of one partition either way."""
    if keys is None:
        return await session.read(
            f"SELECT {columns} FROM {table} WHERE queue_id = ? LIMIT {NO_LIMIT}", [queue_id]
        )
    if not keys:
        return []
    wanted = sorted(set(keys))
    markers = ", ".join("?" * len(wanted))
    return await session.read(
        f"SELECT {columns} FROM {table} WHERE queue_id = ? AND {key_column} IN ({markers})",
        [queue_id, *wanted],
    )


class MessagePartitions:
    """The partitions of one keyspace's messages table, as one process sees them.

    `bucket_seconds` is part of the data layout: every process must use the same value, so
    before the first operation `agree_on_layout` records this value for the keyspace unless
    one is stored already, and adopts the stored one.
    """

    def __init__(
        self,
        session: CassandraSession,
        *,
        bucket_seconds: int,
        shard_count: int,
        closed_bucket_slack_seconds: int,
        clock_ms: Callable[[], int],
    ) -> None:
        self._session = session
        self._bucket_seconds = bucket_seconds
        self.shard_count = shard_count
        self.all_shards = list(range(shard_count))
        self._closed_slack_ms = closed_bucket_slack_seconds * 1000
        self._clock_ms = clock_ms
        self._layout_agreed = False
        self._layout_lock = asyncio.Lock()
        # queue_id -> {bucket: TTL its index entry was written with}, by this process
        self._registered: dict[str, dict[int, int]] = {}

    @property
    def bucket_seconds(self) -> int:
        """The bucket length in use (the agreed one once `agree_on_layout` has run)."""
        return self._bucket_seconds

    async def agree_on_layout(self) -> None:
        """Adopt the bucket length stored for the keyspace (ours, if we are first); once."""
        if self._layout_agreed:
            return
        async with self._layout_lock:
            if not self._layout_agreed:
                agreed = await self._session.agreed_setting(
                    BUCKET_SECONDS_SETTING, str(int(self._bucket_seconds)).encode("ascii")
                )
                self._bucket_seconds = int(agreed.decode("ascii"))
                self._layout_agreed = True

    def locate(self, message_uuid: uuid.UUID) -> rows.MessageLocation:
        return rows.message_location(message_uuid, self._bucket_seconds, self.shard_count)

    def is_closed(self, bucket: int) -> bool:
        """No process should write into the bucket any more."""
        end_ms = rows.bucket_end_ms(bucket, self._bucket_seconds)
        return end_ms + self._closed_slack_ms < self._clock_ms()

    # --- the bucket index -----------------------------------------------------------------

    async def buckets(self, queue_id: str) -> list[int]:
        """Every bucket registered for the queue, oldest first."""
        index = await self._session.read(
            f"SELECT bucket FROM {schema.MESSAGE_BUCKETS_TABLE}"
            f" WHERE queue_id = ? LIMIT {NO_LIMIT}",
            [queue_id],
        )
        return [int(row.bucket) for row in index]

    def index_ttl(self, message_ttl: int) -> int:
        """How long a bucket's index entry must outlive the messages written into it."""
        return message_ttl + self._bucket_seconds + self._closed_slack_ms // 1000

    def unregistered(self, queue_id: str, buckets: set[int], index_ttl: int) -> list[int]:
        """The buckets this process has not registered with at least `index_ttl` yet."""
        registered = self._registered.get(queue_id, {})
        return [bucket for bucket in buckets if registered.get(bucket, 0) < index_ttl]

    async def register_bucket(self, queue_id: str, bucket: int, ttl: int) -> None:
        await self._session.write(
            f"INSERT INTO {schema.MESSAGE_BUCKETS_TABLE} (queue_id, bucket, registered_ms)"
            f" VALUES (?, ?, ?) USING TTL {ttl}",
            [queue_id, bucket, self._clock_ms()],
        )

    def remember_registered(self, queue_id: str, buckets: Sequence[int], index_ttl: int) -> None:
        """Once their index entries are written; only the newest few are kept."""
        registered = self._registered.setdefault(queue_id, {})
        for bucket in buckets:
            registered[bucket] = index_ttl
        for bucket in sorted(registered)[:-_REMEMBERED_BUCKETS]:
            del registered[bucket]

    def forget_queue(self, queue_id: str) -> None:
        self._registered.pop(queue_id, None)

    async def drop_bucket(self, queue_id: str, bucket: int, keep_index: bool = False) -> None:
        """One partition tombstone per shard, then the index entry (so a crash can retry)."""
        markers = ", ".join("?" * self.shard_count)
        await self._session.write(
            f"DELETE FROM {schema.MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers})",
            [queue_id, bucket, *self.all_shards],
        )
        if keep_index:
            return
        await self._session.write(
            f"DELETE FROM {schema.MESSAGE_BUCKETS_TABLE} WHERE queue_id = ? AND bucket = ?",
            [queue_id, bucket],
        )
        self._registered.get(queue_id, {}).pop(bucket, None)

    # --- reading rows ---------------------------------------------------------------------

    async def read_rows(
        self, queue_id: str, bucket: int, shards: Sequence[int], limit: int
    ) -> list[Row]:
        """Up to `limit` rows of the shards, in the order listed, each in id order."""
        markers = ", ".join("?" * len(shards))
        return await self._session.read(
            f"SELECT shard, message_id, payload FROM {schema.MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers}) LIMIT {limit}",
            [queue_id, bucket, *shards],
        )

    async def read_rows_after(
        self, queue_id: str, bucket: int, shard: int, after: uuid.UUID, limit: int
    ) -> list[Row]:
        """Up to `limit` rows of one shard whose ids come after `after`."""
        return await self._session.read(
            f"SELECT shard, message_id, payload FROM {schema.MESSAGES_TABLE}"
            " WHERE queue_id = ? AND bucket = ? AND shard = ? AND message_id > ?"
            f" LIMIT {limit}",
            [queue_id, bucket, shard, after],
        )

    async def read_messages(
        self, queue_id: str, bucket: int, shards: Sequence[int], limit: int
    ) -> list[Message]:
        found = await self.read_rows(queue_id, bucket, sorted(shards), limit)
        return [rows.message_from_row(row.message_id, row.payload) for row in found]

    def scan_bucket(
        self, queue_id: str, bucket: int, page_size: int
    ) -> AsyncIterator[list[Message]]:
        """Pages of one bucket's messages (`shard_pages`)."""
        return shard_pages(
            lambda remaining: self.read_rows(queue_id, bucket, remaining, page_size),
            lambda shard, after: self.read_rows_after(queue_id, bucket, shard, after, page_size),
            shard_count=self.shard_count,
            page_size=page_size,
            keep=lambda page: [rows.message_from_row(row.message_id, row.payload) for row in page],
        )


async def shard_pages(
    read_shards: Callable[[list[int]], Awaitable[list[Row]]],
    read_after: Callable[[int, uuid.UUID], Awaitable[list[Row]]],
    *,
    shard_count: int,
    page_size: int,
    keep: Callable[[list[Row]], list[T]],
) -> AsyncIterator[list[T]]:
    """Pages of one bucket's rows (what `keep` keeps of each, when it keeps any): an IN over
    the remaining shards (`read_shards`), then resume inside a shard (`read_after` its last
    message id) where a full page ended.

    Protocol v1 has no driver paging; a multi-partition IN returns partitions in the
    order listed, each in clustering order, so (shard, last id) is a resume point. Rows
    carry `shard` and `message_id`; shards are numbered 0 to shard_count - 1.
    """
    shards = list(range(shard_count))
    position = 0
    after: uuid.UUID | None = None
    while position < shard_count:
        if after is None:
            page = await read_shards(shards[position:])
        else:
            page = await read_after(shards[position], after)
        kept = keep(page)
        if kept:
            yield kept
        if len(page) < page_size:
            if after is None:
                return  # every remaining shard answered in full
            position, after = position + 1, None
        else:
            position, after = int(page[-1].shard), page[-1].message_id
