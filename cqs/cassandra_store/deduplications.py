"""The durable copy of FIFO queues' deduplication records, for refilling a lost cache.

Owns the use of the `fifo_deduplications` table: records written with a TTL of the
deduplication interval, read back by key or for a whole queue, dropped with their queue.
Imports `cqs.domain.model` and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cqs.cassandra_store import schema
from cqs.cassandra_store.partitions import read_queue_partition
from cqs.cassandra_store.session import CassandraSession, all_or_first_error
from cqs.domain.model import Deduplication, Queue

_COLUMNS = "dedup_key, message_id, sequence, expires_ms"


async def record_deduplications(
    session: CassandraSession, queue: Queue, records: Sequence[Deduplication]
) -> None:
    insert = (
        f"INSERT INTO {schema.FIFO_DEDUPLICATIONS_TABLE}"
        " (queue_id, dedup_key, message_id, sequence, expires_ms) VALUES (?, ?, ?, ?, ?)"
        f" USING TTL {schema.DEDUPLICATION_TTL_SECONDS}"
    )
    await all_or_first_error(
        [
            session.write(
                insert,
                [queue.queue_id, record.key, record.message_id, record.sequence_number,
                 record.expires_ms],
            )
            for record in records
        ]
    )


async def read_deduplications(
    session: CassandraSession,
    queue: Queue,
    keys: Sequence[str] | None,
    clock_ms: Callable[[], int],
) -> list[Deduplication]:
    """The queue's records not yet expired when read: all of them, or those of `keys`."""
    found = await read_queue_partition(
        session, schema.FIFO_DEDUPLICATIONS_TABLE, _COLUMNS, queue.queue_id, "dedup_key", keys
    )
    now_ms = clock_ms()
    return [
        Deduplication(row.dedup_key, row.message_id, int(row.sequence), int(row.expires_ms))
        for row in found
        if int(row.expires_ms) > now_ms
    ]


async def drop_deduplications(session: CassandraSession, queue: Queue) -> None:
    await session.write(
        f"DELETE FROM {schema.FIFO_DEDUPLICATIONS_TABLE} WHERE queue_id = ?", [queue.queue_id]
    )
