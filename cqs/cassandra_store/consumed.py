"""CassandraConsumedMessages: the `ConsumedMessageStore` port over `queue_consumed_messages`.

Owns where a consumed message's copy lives: partition (queue_id, hour of the delete, shard),
the shard a checksum of the FIFO message group (or of the message id on a standard queue),
so that a group's copies share a partition and come back in delete order; clustered by a
version-1 UUID whose timestamp is the delete time. Reading a time range walks its hours
and each hour's shards one by one, resumable at (bucket, shard, last id). Copies expire by
TTL: nothing is ever deleted here, so the table gathers no tombstones.

Also owns the records of replays (`message_replays`: one row per replay, rewritten whole
after each batch it sends) and their copy ledgers (`message_replay_copies`: source message
id -> copy id, one partition per replay), both by TTL. Plain writes, no lightweight
transactions: the CQL runs unchanged on the embedded node, Cassandra 4.0+ and ScyllaDB.

Imports `cqs.domain.model` and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
import random
import uuid
import zlib
from collections.abc import Mapping, Sequence

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.session import CassandraSession, Row, all_or_first_error
from cqs.domain.extension_model import ConsumedMessage, ConsumedRange, Replay
from cqs.domain.model import Queue

_UUID_EPOCH_OFFSET = 0x01B21DD213814000  # 100-ns intervals from 1582-10-15 to 1970-01-01
_TICKS_PER_MS = 10_000
# The 100-ns part of a consumed id's timestamp stays below this, so that every id of one
# millisecond lies strictly between the bounds `_before(ms)` and `_before(ms + 1)`.
_TICK_SPREAD = 8192


def consumed_id(consumed_ms: int) -> uuid.UUID:
    """A version-1 UUID at `consumed_ms` (random sub-millisecond ticks, clock and node)."""
    return _uuid_at_ticks(consumed_ms * _TICKS_PER_MS + random.randrange(_TICK_SPREAD))


def _before(time_ms: int) -> uuid.UUID:
    """A bound just before every consumed id of `time_ms` and after every earlier one
    (timeuuids compare by timestamp first)."""
    return _uuid_at_ticks(time_ms * _TICKS_PER_MS - 1)


def _uuid_at_ticks(ticks: int) -> uuid.UUID:
    timestamp = ticks + _UUID_EPOCH_OFFSET
    clock = random.getrandbits(14)
    return uuid.UUID(fields=(
        timestamp & 0xFFFFFFFF,
        (timestamp >> 32) & 0xFFFF,
        ((timestamp >> 48) & 0x0FFF) | 0x1000,
        ((clock >> 8) & 0x3F) | 0x80,
        clock & 0xFF,
        random.getrandbits(48) | 0x010000000000,
    ))


def shard_of(consumed: ConsumedMessage) -> int:
    key = consumed.message.group_id or consumed.message.message_id
    return zlib.crc32(key.encode("utf-8")) % schema.CONSUMED_SHARD_COUNT


def bucket_of(time_ms: int) -> int:
    return time_ms // (schema.CONSUMED_BUCKET_SECONDS * 1000)


class CassandraConsumedMessages:
    """Consumed-message copies of every queue, on the keyspace's session."""

    def __init__(self, session: CassandraSession) -> None:
        self._session = session

    async def keep(
        self, queue: Queue, consumed: Sequence[ConsumedMessage], keep_seconds: int
    ) -> None:
        insert = (
            f"INSERT INTO {schema.CONSUMED_MESSAGES_TABLE}"
            " (queue_id, bucket, shard, consumed_id, consumed_ms, message_id, payload)"
            f" VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL {max(1, int(keep_seconds))}"
        )
        await all_or_first_error([
            self._session.write(insert, [
                queue.queue_id, bucket_of(copy.consumed_ms), shard_of(copy),
                consumed_id(copy.consumed_ms), copy.consumed_ms, copy.message.message_id,
                rows.encode_payload(copy.message),
            ])
            for copy in consumed
        ])

    async def read(
        self, queue: Queue, span: ConsumedRange, after: str | None, limit: int
    ) -> tuple[list[ConsumedMessage], str | None]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        if span.end_ms <= span.start_ms:
            return [], None
        first, last = bucket_of(span.start_ms), bucket_of(span.end_ms - 1)
        bucket, shard, resume = _read_position(after, first, last)
        found: list[ConsumedMessage] = []
        while bucket <= last:
            # One shard at a time, each read bounded by what the page still needs: a page
            # holds at most `limit` payloads in memory, whatever the range holds.
            page = await self._read_shard(queue, span, bucket, shard, resume, limit - len(found))
            found.extend(_consumed(row) for row in page)
            if len(found) >= limit:
                return found, _position(bucket, shard, page[-1].consumed_id)
            shard, resume = shard + 1, None
            if shard == schema.CONSUMED_SHARD_COUNT:
                bucket, shard = bucket + 1, 0
        return found, None

    async def _read_shard(
        self, queue: Queue, span: ConsumedRange, bucket: int, shard: int,
        after: uuid.UUID | None, limit: int,
    ) -> list[Row]:
        return await self._session.read(
            f"SELECT consumed_id, consumed_ms, message_id, payload"
            f" FROM {schema.CONSUMED_MESSAGES_TABLE}"
            " WHERE queue_id = ? AND bucket = ? AND shard = ? AND consumed_id > ?"
            f" AND consumed_id < ? LIMIT {limit}",
            [queue.queue_id, bucket, shard, after or _before(span.start_ms),
             _before(span.end_ms)],
        )


    # --- replays ------------------------------------------------------------------------------

    async def replay(self, queue: Queue, replay_id: str) -> Replay | None:
        found = await self._session.read(
            "SELECT start_ms, end_ms, until_ms, position, replayed, done, running"
            f" FROM {schema.REPLAYS_TABLE} WHERE queue_id = ? AND replay_id = ?",
            [queue.queue_id, replay_id],
        )
        if not found:
            return None
        row = found[0]
        return Replay(
            replay_id=replay_id,
            span=ConsumedRange(int(row.start_ms), int(row.end_ms)),
            until_ms=int(row.until_ms),
            position=row.position or None,
            replayed=int(row.replayed or 0),
            done=bool(row.done),
            running=bool(row.running),
        )

    async def save_replay(self, queue: Queue, replay: Replay, keep_seconds: int) -> None:
        # The whole row each time, so that every column carries the same TTL.
        await self._session.write(
            f"INSERT INTO {schema.REPLAYS_TABLE} (queue_id, replay_id, start_ms, end_ms,"
            " until_ms, position, replayed, done, running) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            f" USING TTL {max(1, int(keep_seconds))}",
            [queue.queue_id, replay.replay_id, replay.span.start_ms, replay.span.end_ms,
             replay.until_ms, replay.position or "", replay.replayed, replay.done,
             replay.running],
        )

    async def replay_copies(
        self, queue: Queue, replay_id: str, source_ids: Sequence[str]
    ) -> dict[str, str]:
        # One single-row read per source: IN on a clustering column is not CQL 3.0.0.
        select = (
            f"SELECT copy_id FROM {schema.REPLAY_COPIES_TABLE}"
            " WHERE queue_id = ? AND replay_id = ? AND source_id = ?"
        )
        found = await asyncio.gather(*(
            self._session.read(select, [queue.queue_id, replay_id, source])
            for source in source_ids
        ))
        return {
            source: str(rows_found[0].copy_id)
            for source, rows_found in zip(source_ids, found, strict=True) if rows_found
        }

    async def record_replay_copies(
        self, queue: Queue, replay_id: str, copies: Mapping[str, str], keep_seconds: int
    ) -> None:
        if not copies:
            return
        insert = (
            f"INSERT INTO {schema.REPLAY_COPIES_TABLE} (queue_id, replay_id, source_id, copy_id)"
            f" VALUES (?, ?, ?, ?) USING TTL {max(1, int(keep_seconds))}"
        )
        # One partition: an unlogged batch is one write to one replica set, not a batchlog.
        text = insert if len(copies) == 1 else (
            "BEGIN UNLOGGED BATCH " + "; ".join([insert] * len(copies)) + " APPLY BATCH"
        )
        await self._session.write(text, [
            value for source, copy in copies.items()
            for value in (queue.queue_id, replay_id, source, copy)
        ])


def _consumed(row: Row) -> ConsumedMessage:
    return ConsumedMessage(
        rows.decode_payload(str(row.message_id), row.payload), int(row.consumed_ms)
    )


def _position(bucket: int, shard: int, last: uuid.UUID) -> str:
    return f"{bucket}.{shard}.{last}"


def _read_position(
    position: str | None, first: int, last: int
) -> tuple[int, int, uuid.UUID | None]:
    if not position:
        return first, 0, None
    try:
        bucket_text, shard_text, last_id = position.split(".")
        bucket, shard, resume = int(bucket_text), int(shard_text), uuid.UUID(last_id)
    except ValueError as exc:
        raise ValueError(f"not a consumed-message position: {position!r}") from exc
    if not first <= bucket <= last or not 0 <= shard < schema.CONSUMED_SHARD_COUNT:
        raise ValueError(f"position {position!r} is outside the range read")
    return bucket, shard, resume
