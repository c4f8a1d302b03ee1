"""Delivery claims: which process handed a message out straight from the store, and until when.

Owns the use of the `delivery_claims` table. While a queue has no ready cache, receives are
served from the store in every process; a claim, taken with a lightweight transaction,
lets only one of them hand a message out until its visibility timeout passes, and fills
load claimed messages in flight rather than visible. Rows live by TTL only. Imports
`cqs.domain.model` and this package; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from cqs.cassandra_store import schema
from cqs.cassandra_store.partitions import read_queue_partition
from cqs.cassandra_store.session import CassandraSession
from cqs.domain.errors import StorageError
from cqs.domain.model import Queue

_CLAIM = (
    f"INSERT INTO {schema.DELIVERY_CLAIMS_TABLE} (queue_id, message_id, hidden_until_ms)"
    " VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?"
)
_RENEW = (
    f"INSERT INTO {schema.DELIVERY_CLAIMS_TABLE} (queue_id, message_id, hidden_until_ms)"
    " VALUES (?, ?, ?) USING TTL ?"
)


def _ttl_seconds(hidden_until_ms: int, now_ms: int) -> int:
    """Whole seconds from `now_ms` past `hidden_until_ms` (at least 1: a TTL of 0 is none)."""
    return max(1, -(-(hidden_until_ms - now_ms) // 1000))


async def claim(
    session: CassandraSession, queue: Queue, message_ids: Sequence[str],
    hidden_until_ms: int, now_ms: int,
) -> set[str]:
    """The ids of `message_ids` this call claimed. A claim that could not be settled (a
    timeout: it may still land) counts as not taken, so its message is not handed out."""
    ttl = _ttl_seconds(hidden_until_ms, now_ms)

    async def one(message_id: str) -> bool:
        try:
            return await session.write_if(
                _CLAIM, [queue.queue_id, message_id, hidden_until_ms, ttl]
            )
        except StorageError:
            return False

    taken = await asyncio.gather(*(one(message_id) for message_id in message_ids))
    return {message_id for message_id, won in zip(message_ids, taken, strict=True) if won}


async def renew_claim(
    session: CassandraSession, queue: Queue, message_id: str, hidden_until_ms: int, now_ms: int
) -> None:
    """Move a claim this process holds to `hidden_until_ms` (ChangeMessageVisibility)."""
    ttl = _ttl_seconds(hidden_until_ms, now_ms)
    await session.write(_RENEW, [queue.queue_id, message_id, hidden_until_ms, ttl])


async def claims(
    session: CassandraSession, queue: Queue, now_ms: int, message_ids: Sequence[str] | None
) -> dict[str, int]:
    """Message id -> hidden until (ms) of the queue's claims still in force at `now_ms`:
    all of them, or those among `message_ids` (one read of one partition either way)."""
    rows = await read_queue_partition(
        session, schema.DELIVERY_CLAIMS_TABLE, "message_id, hidden_until_ms", queue.queue_id,
        "message_id", message_ids,
    )
    return {
        row.message_id: int(row.hidden_until_ms)
        for row in rows
        if int(row.hidden_until_ms) > now_ms
    }
