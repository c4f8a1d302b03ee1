"""How message rows reach Cassandra: group commit into unlogged batches.

Writes and deletes of message rows from concurrent requests (any queue) made within one
event-loop turn are collected (`cqs.cassandra_store.coalescing`) and sent as unlogged batches of at most
BATCH_ROWS rows and BATCH_PAYLOAD_BYTES payload bytes: one request and one hand-off to the
driver per batch instead of per row. Each caller still returns only once its own rows
are written (or gets the batch's error). Imports this package and `cqs.cassandra_store.coalescing` only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from cqs.cassandra_store import schema
from cqs.cassandra_store.coalescing import Coalescer
from cqs.cassandra_store.session import CassandraSession, all_or_first_error

# Cassandra 3.0+ warns past 10 partitions and 5 KiB per batch and refuses past 50 KiB
# (its defaults), so bigger messages are written one per request.
BATCH_ROWS = 10
BATCH_PAYLOAD_BYTES = 5 * 1024

# A row's bound values and its payload size in bytes (0 for a delete).
RowValues = tuple[list[object], int]

_DELETE = (
    f"DELETE FROM {schema.MESSAGES_TABLE}"
    " WHERE queue_id = ? AND bucket = ? AND shard = ? AND message_id = ?"
)


def _insert(ttl: int) -> str:
    return (
        f"INSERT INTO {schema.MESSAGES_TABLE} (queue_id, bucket, shard, message_id, payload)"
        f" VALUES (?, ?, ?, ?, ?) USING TTL {ttl}"  # CQL 3.0 has no bind marker for TTL
    )


class MessageRowWriter:
    """Inserts (by TTL) and deletes of message rows, group-committed in unlogged batches."""

    def __init__(self, session: CassandraSession) -> None:
        self._session = session
        self._prepared_families: set[str] = set()
        self._inserts: Coalescer[int, RowValues] = Coalescer(self._flush_inserts)
        self._deletes: Coalescer[None, RowValues] = Coalescer(self._flush_deletes)

    async def insert(self, ttl: int, rows: Sequence[RowValues]) -> None:
        """(queue_id, bucket, shard, message_id, payload) rows, kept for `ttl` seconds."""
        if rows:
            await self._inserts.submit(ttl, rows)

    async def delete(self, keys: Sequence[RowValues]) -> None:
        """(queue_id, bucket, shard, message_id) rows; a missing row is not an error.

        A row tombstone (Cassandra 3.0 and later; docs/cassandra-deletes.md)."""
        if keys:
            await self._deletes.submit(None, keys)

    async def _flush_inserts(self, ttl: int, rows: list[RowValues]) -> None:
        await self._prepare_family(_insert(ttl))
        await all_or_first_error(self._batched_writes(_insert(ttl), rows))

    async def _flush_deletes(self, _: None, keys: list[RowValues]) -> None:
        await self._prepare_family(_DELETE)
        await all_or_first_error(self._batched_writes(_DELETE, keys))

    async def _prepare_family(self, statement: str) -> None:
        """Prepare the statement's batches of every size at its first use, together: a
        prepare waits for every node, so one first needed while a node is frozen would
        hold its writes until the node is given up on."""
        if statement in self._prepared_families:
            return
        await asyncio.gather(*(
            self._session.prepare(_batch_text(statement, size), write=True)
            for size in range(1, BATCH_ROWS + 1)
        ))
        self._prepared_families.add(statement)

    def _batched_writes(self, statement: str, rows: Sequence[RowValues]) -> list[Awaitable[None]]:
        writes: list[Awaitable[None]] = []
        for chunk in write_batches(rows):
            text = _batch_text(statement, len(chunk))
            writes.append(self._session.write(text, [v for values in chunk for v in values]))
        return writes


def _batch_text(statement: str, size: int) -> str:
    if size == 1:
        return statement
    return "BEGIN UNLOGGED BATCH " + "; ".join([statement] * size) + " APPLY BATCH"


def write_batches(rows: Sequence[RowValues]) -> list[list[list[object]]]:
    """Rows' values grouped in order into batches within BATCH_ROWS and BATCH_PAYLOAD_BYTES
    (a row bigger than the byte limit alone)."""
    batches: list[list[list[object]]] = []
    current: list[list[object]] = []
    current_bytes = 0
    for values, size in rows:
        if current and (len(current) == BATCH_ROWS or current_bytes + size > BATCH_PAYLOAD_BYTES):
            batches.append(current)
            current, current_bytes = [], 0
        current.append(values)
        current_bytes += size
    if current:
        batches.append(current)
    return batches
