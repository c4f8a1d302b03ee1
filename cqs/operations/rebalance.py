"""`cqs rebalance`: after the Redis server list changed, move the caches whose owner changed.

Owns the move itself, over adapters `cqs.main` opens and closes: for every queue whose ring
owner changed, apply the deletes the old owner still remembers, then drop the queue's cache
on both owners, so the new owner refills it from Cassandra on next use. Imports the ports
and the errors; never an adapter, aiohttp or the service.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import QueueIdentity
from cqs.ports import MessageStore, QueueCatalog

# Deferred deletes read from the old ring at most (all of them, in practice).
_DEFERRED_DELETES_LIMIT = 1_000_000


class RingedCache(Protocol):
    """A message cache spread over a ring of servers, as the move needs it."""

    def server_url_for(self, queue: QueueIdentity) -> str: ...

    async def deferred_store_deletes(self, limit: int) -> dict[QueueIdentity, list[str]]: ...

    async def drop(self, queue: QueueIdentity) -> None: ...


async def rebalance(
    catalog: QueueCatalog, store: MessageStore, before: RingedCache, after: RingedCache
) -> list[QueueIdentity]:
    """Move every queue whose owner differs between the `before` and `after` rings; the
    moved queues. The old owner may be gone: its drop is then skipped."""
    pending = await before.deferred_store_deletes(_DEFERRED_DELETES_LIMIT)
    moved: list[QueueIdentity] = []
    for identity in await catalog.list_all():
        if before.server_url_for(identity) == after.server_url_for(identity):
            continue
        queue = await catalog.get(identity)
        if queue is not None:
            for message_id in pending.get(identity, []):
                await store.delete(queue, message_id)
        with contextlib.suppress(StorageUnavailable):
            await before.drop(identity)
        await after.drop(identity)
        moved.append(identity)
    return moved
