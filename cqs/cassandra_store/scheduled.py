"""CassandraScheduledMessages: the durable `ScheduledMessages` of timer messages (#19).

Owns the three timer tables of `schema.py`: the messages by (queue incarnation, due
minute, shard) clustered by due time, the per-minute counters that are both the count and
the index of the minutes holding messages, and the one-partition list of queues with timer
messages. Minutes and shards never leave this module. Imports `cqs.domain.model`, `cqs.domain.errors`
and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.partitions import NO_LIMIT
from cqs.cassandra_store.session import CassandraSession, all_or_first_error
from cqs.domain.extension_model import ScheduledQueue, ScheduledSummary
from cqs.domain.model import Message, Queue, QueueIdentity

BUCKET_MS = schema.SCHEDULED_BUCKET_SECONDS * 1000
SHARDS = tuple(range(schema.SCHEDULED_SHARD_COUNT))
# Rows outlive their due time by a day at most if never promoted (say the queue was deleted
# while no process ran): a promotion deletes them long before.
ORPHAN_SLACK_SECONDS = 86_400
# Minutes `summary` looks into for the earliest due time (past minutes just emptied).
EARLIEST_BUCKETS = 4
RING = 0


class CassandraScheduledMessages:
    def __init__(self, session: CassandraSession) -> None:
        self._session = session
        self._registered: set[str] = set()  # queue ids this process has listed already

    async def schedule(self, queue: Queue, messages: Sequence[Message]) -> None:
        ttl = queue.retention_seconds + ORPHAN_SLACK_SECONDS  # few distinct texts to prepare
        insert = (
            f"INSERT INTO {schema.SCHEDULED_MESSAGES_TABLE}"
            " (queue_id, bucket, shard, due_ms, message_id, payload)"
            f" VALUES (?, ?, ?, ?, ?, ?) USING TTL {ttl}"
        )
        placed, per_bucket = _placed(messages)
        writes = [
            self._session.write(insert, [
                queue.queue_id, row.bucket, row.shard, row.message.visible_at_ms,
                row.message_uuid, rows.encode_payload(row.message),
            ])
            for row in placed
        ]
        writes.extend(
            self._count(queue.queue_id, bucket, added) for bucket, added in per_bucket.items()
        )
        if queue.queue_id not in self._registered:
            identity = queue.identity
            writes.append(self._session.write(
                f"INSERT INTO {schema.SCHEDULED_QUEUES_TABLE}"
                " (ring, queue_id, account_id, region, name) VALUES (?, ?, ?, ?, ?)",
                [RING, queue.queue_id, identity.account_id, identity.region, identity.name],
            ))
        await all_or_first_error(writes)
        self._registered.add(queue.queue_id)

    async def queues(self) -> list[ScheduledQueue]:
        found = await self._session.read(
            "SELECT queue_id, account_id, region, name"
            f" FROM {schema.SCHEDULED_QUEUES_TABLE} WHERE ring = ? LIMIT {NO_LIMIT}",
            [RING],
        )
        return [
            ScheduledQueue(QueueIdentity(row.account_id, row.region, row.name), row.queue_id)
            for row in found
        ]

    async def due(self, queue: Queue, until_ms: int, limit: int) -> list[Message]:
        found: list[Message] = []
        for bucket in await self._buckets(queue.queue_id, until_ms // BUCKET_MS):
            markers = ", ".join("?" * len(SHARDS))
            page = await self._session.read(
                f"SELECT message_id, payload FROM {schema.SCHEDULED_MESSAGES_TABLE}"
                f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers}) AND due_ms <= ?"
                f" LIMIT {limit - len(found)}",
                [queue.queue_id, bucket, *SHARDS, until_ms],
            )
            found.extend(rows.message_from_row(row.message_id, row.payload) for row in page)
            if len(found) >= limit:
                break
        return found

    async def remove(self, queue: Queue, messages: Sequence[Message]) -> None:
        placed, per_bucket = _placed(messages)
        await all_or_first_error([
            self._session.write(
                f"DELETE FROM {schema.SCHEDULED_MESSAGES_TABLE} WHERE queue_id = ?"
                " AND bucket = ? AND shard = ? AND due_ms = ? AND message_id = ?",
                [queue.queue_id, row.bucket, row.shard, row.message.visible_at_ms,
                 row.message_uuid],
            )
            for row in placed
        ])
        # After the rows: a lost decrement leaves the count high, never a message unlisted.
        await all_or_first_error(
            [self._count(queue.queue_id, bucket, -n) for bucket, n in per_bucket.items()]
        )

    async def finish_through(self, queue: Queue, until_ms: int) -> None:
        # Only minutes wholly past `until_ms`: no send writes there any more (the horizon).
        last_whole = until_ms // BUCKET_MS - 1
        for bucket in await self._buckets(queue.queue_id, last_whole):
            if not await self._bucket_rows(queue.queue_id, bucket, 1):
                await self._session.write(
                    f"DELETE FROM {schema.SCHEDULED_COUNTS_TABLE}"
                    " WHERE queue_id = ? AND bucket = ?",
                    [queue.queue_id, bucket],
                )

    async def has_finished_minutes(self, queue: Queue, until_ms: int) -> bool:
        return bool(await self._buckets(queue.queue_id, until_ms // BUCKET_MS - 1))

    async def summary(self, queue: Queue) -> ScheduledSummary:
        found = await self._session.read(
            f"SELECT bucket, messages FROM {schema.SCHEDULED_COUNTS_TABLE}"
            f" WHERE queue_id = ? LIMIT {NO_LIMIT}",
            [queue.queue_id],
        )
        count = max(0, sum(int(row.messages or 0) for row in found))
        earliest: int | None = None
        for row in found[:EARLIEST_BUCKETS]:
            firsts = await asyncio.gather(*(
                self._session.read(
                    f"SELECT due_ms FROM {schema.SCHEDULED_MESSAGES_TABLE}"
                    " WHERE queue_id = ? AND bucket = ? AND shard = ? LIMIT 1",
                    [queue.queue_id, int(row.bucket), shard],
                )
                for shard in SHARDS
            ))
            dues = [int(first[0].due_ms) for first in firsts if first]
            if dues:
                earliest = min(dues)
                break
        return ScheduledSummary(count, earliest)

    async def drop(self, queue: Queue) -> None:
        await self._drop(queue.queue_id)

    async def forget_queue(self, scheduled: ScheduledQueue) -> None:
        await self._drop(scheduled.queue_id)
        await self._session.write(
            f"DELETE FROM {schema.SCHEDULED_QUEUES_TABLE} WHERE ring = ? AND queue_id = ?",
            [RING, scheduled.queue_id],
        )
        self._registered.discard(scheduled.queue_id)

    # --- helpers -----------------------------------------------------------------------------

    async def _drop(self, queue_id: str) -> None:
        for bucket in await self._buckets(queue_id, None):
            await all_or_first_error([
                self._session.write(
                    f"DELETE FROM {schema.SCHEDULED_MESSAGES_TABLE}"
                    " WHERE queue_id = ? AND bucket = ? AND shard = ?",
                    [queue_id, bucket, shard],
                )
                for shard in SHARDS
            ])
            await self._session.write(
                f"DELETE FROM {schema.SCHEDULED_COUNTS_TABLE} WHERE queue_id = ? AND bucket = ?",
                [queue_id, bucket],
            )

    async def _buckets(self, queue_id: str, last: int | None) -> list[int]:
        """The minutes of the queue that hold (or held) messages, up to `last` if given."""
        if last is None:
            found = await self._session.read(
                f"SELECT bucket FROM {schema.SCHEDULED_COUNTS_TABLE}"
                f" WHERE queue_id = ? LIMIT {NO_LIMIT}",
                [queue_id],
            )
        else:
            found = await self._session.read(
                f"SELECT bucket FROM {schema.SCHEDULED_COUNTS_TABLE}"
                f" WHERE queue_id = ? AND bucket <= ? LIMIT {NO_LIMIT}",
                [queue_id, last],
            )
        return [int(row.bucket) for row in found]

    async def _bucket_rows(self, queue_id: str, bucket: int, limit: int) -> list[object]:
        markers = ", ".join("?" * len(SHARDS))
        return list(await self._session.read(
            f"SELECT message_id FROM {schema.SCHEDULED_MESSAGES_TABLE}"
            f" WHERE queue_id = ? AND bucket = ? AND shard IN ({markers}) LIMIT {limit}",
            [queue_id, bucket, *SHARDS],
        ))

    async def _count(self, queue_id: str, bucket: int, delta: int) -> None:
        await self._session.write(
            f"UPDATE {schema.SCHEDULED_COUNTS_TABLE} SET messages = messages + ?"
            " WHERE queue_id = ? AND bucket = ?",
            [delta, queue_id, bucket],
        )


@dataclass(frozen=True, slots=True)
class _Placed:
    """Where one scheduled message's row is: its minute bucket, its shard, its id as a UUID."""

    message: Message
    message_uuid: uuid.UUID
    bucket: int
    shard: int


def _placed(messages: Sequence[Message]) -> tuple[list[_Placed], Counter[int]]:
    """Each message's row, and how many of the rows fall in each bucket."""
    placed = []
    for message in messages:
        message_uuid = _uuid(message)
        placed.append(_Placed(
            message, message_uuid, message.visible_at_ms // BUCKET_MS, _shard(message_uuid)
        ))
    return placed, Counter(row.bucket for row in placed)


def _uuid(message: Message) -> uuid.UUID:
    message_uuid = rows.parse_message_id(message.message_id)
    if message_uuid is None:
        raise ValueError(f"message id {message.message_id!r} is not a version-1 UUID")
    return message_uuid


def _shard(message_uuid: uuid.UUID) -> int:
    return message_uuid.int % schema.SCHEDULED_SHARD_COUNT
