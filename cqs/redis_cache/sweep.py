"""The reads and moves that span every server of the pool, on behalf of background workers.

Owns the revisibility sweep (`release_due`: hidden messages whose time has come go back to
their visible list, one sweeper per server at a time under a lease) and the collection of
deferred store deletes across servers. A server that does not answer is skipped, so the
others still get swept. Imports redis (through `servers.py`), the errors and its own
package; never the service, aiohttp or cassandra.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import cast

from cqs.domain.errors import StorageError
from cqs.domain.model import QueueIdentity
from cqs.redis_cache.keys import (
    ARRIVALS_CHANNEL,
    DUE_KEY,
    STORE_DELETE_QUEUES_KEY,
    SWEEPER_KEY,
    QueueKeys,
    queue_from_key,
)
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.servers import RedisServer

log = logging.getLogger(__name__)


async def release_due(
    pool: ServerPool, now_ms: int, limit: int, sweeper: str, lease_ms: int
) -> list[QueueIdentity]:
    """Visits at most `limit` due queues per server and moves at most `limit` messages
    of each; what is left stays due in `cqs:due` for the next call.

    `lease_ms` should outlast the time between two calls of the same sweeper, or the
    lease lapses between sweeps and another process may take it over.
    """
    per_server = await asyncio.gather(
        *(_release_due_on(pool, server, now_ms, limit, sweeper, lease_ms)
          for server in pool.servers)
    )
    return [queue for released in per_server for queue in released]


async def _release_due_on(
    pool: ServerPool, server: RedisServer, now_ms: int, limit: int, sweeper: str, lease_ms: int
) -> list[QueueIdentity]:
    released: list[QueueIdentity] = []
    try:
        holds_lease = await pool.call(
            server,
            server.scripts.sweep_lease,
            keys=[SWEEPER_KEY],
            args=[sweeper, max(1, lease_ms)],
        )
        if not holds_lease:
            return released  # another process sweeps this server
        due_queues = cast(
            "list[str]",
            await pool.call(
                server, server.client.zrangebyscore, DUE_KEY, "-inf", now_ms, start=0, num=limit
            ),
        )
        if due_queues:
            moved = await pool.call(
                server, _release_due_queues, server, due_queues, now_ms, limit
            )
            released = [
                queue
                for key, count in zip(due_queues, moved, strict=True)
                if count and (queue := queue_from_key(key)) is not None
            ]
    except StorageError:
        # the breaker logged the outage once; the sweep goes on with the other servers
        log.debug("skipping the revisibility sweep on %s: unreachable", server.label)
    return released


async def _release_due_queues(
    server: RedisServer, queue_keys: Sequence[str], now_ms: int, limit: int
) -> list[int]:
    """One `release_due` script call per queue, all in one pipeline (one round trip).

    A member left by a version before queue keys held the account and region names no
    queue; it is dropped from `cqs:due`.
    """
    pipeline = server.client.pipeline(transaction=False)
    for key in queue_keys:
        queue = queue_from_key(key)
        if queue is None:
            pipeline.zrem(DUE_KEY, key)
            continue
        await server.scripts.release_due(
            keys=QueueKeys(queue).script_keys(),
            args=[now_ms, limit, key, ARRIVALS_CHANNEL],
            client=pipeline,
        )
    return [int(count) for count in await pipeline.execute()]


async def deferred_store_deletes(
    pool: ServerPool, limit: int
) -> dict[QueueIdentity, list[str]]:
    """Not atomic: ids deferred or forgotten meanwhile may or may not be included.

    Servers and queues are visited in random order, so a queue whose deletes keep
    failing does not starve the others.
    """
    found: dict[QueueIdentity, list[str]] = {}
    servers = pool.servers
    random.shuffle(servers)
    for server in servers:
        remaining = limit - sum(len(ids) for ids in found.values())
        if remaining <= 0:
            break
        try:
            found.update(await pool.call(server, _read_store_deletes, server, remaining))
        except StorageError:
            log.debug("skipping deferred store deletes on %s: unreachable", server.label)
    return found


async def _read_store_deletes(server: RedisServer, limit: int) -> dict[QueueIdentity, list[str]]:
    found: dict[QueueIdentity, list[str]] = {}
    queue_keys = list(cast("set[str]", await server.client.smembers(STORE_DELETE_QUEUES_KEY)))
    random.shuffle(queue_keys)
    for queue_key in queue_keys:
        queue = queue_from_key(queue_key)
        if limit <= 0:
            break
        if queue is None:
            continue  # left by an earlier version: its queue's keys are not read any more
        ids = cast("list[str]", await server.client.srandmember(QueueKeys(queue).store_deletes, limit))
        if ids:
            found[queue] = ids
            limit -= len(ids)
    return found


# --- Redis Cluster: no per-server keys (`keys.py`) ----------------------------------------


async def release_listened_due(
    pool: ServerPool, queues: Sequence[QueueIdentity], now_ms: int, limit: int
) -> list[QueueIdentity]:
    """The sweep under Redis Cluster: each process sweeps the queues its own long polls
    listen on (the only ones a sweep wakes anybody for: a receive moves a queue's due
    messages itself). Several processes may sweep one queue; each release is one atomic
    script in the queue's slot, so a second finds nothing left to move."""
    if not queues:
        return []
    [server] = pool.servers
    visited = list(queues)[:limit]

    async def due_scores() -> list[float | None]:
        return list(await asyncio.gather(
            *(server.client.zscore(QueueKeys(queue).own_due, queue.key) for queue in visited)
        ))

    async def release(queue: QueueIdentity) -> int:
        keys = QueueKeys(queue)
        return int(await pool.run_script(
            server, server.scripts.release_due, keys.script_keys(clustered=True),
            [now_ms, limit, queue.key, keys.arrivals],
        ))

    try:
        scores = await pool.call(server, due_scores)
        due = [q for q, score in zip(visited, scores, strict=True)
               if score is not None and score <= now_ms]
        moved = await asyncio.gather(*(release(queue) for queue in due))
    except StorageError:
        log.debug("skipping the revisibility sweep on %s: unreachable", server.label)
        return []
    return [queue for queue, count in zip(due, moved, strict=True) if count]


async def note_store_deletes(pool: ServerPool, queue: QueueIdentity) -> None:
    """Name the queue in the cluster's directory of queues with deferred store deletes.

    Written after the script that deferred the delete (the directory lives in another
    slot), so a collector that empties the directory meanwhile cannot lose the queue
    (`cluster_deferred_store_deletes` puts back a queue it finds not empty). A process that
    dies between the two leaves a delete that only the queue's next deferred delete names
    again; a fill still skips the message meanwhile."""
    [server] = pool.servers
    await pool.call(server, server.client.sadd, STORE_DELETE_QUEUES_KEY, queue.key)


async def cluster_deferred_store_deletes(
    pool: ServerPool, limit: int
) -> dict[QueueIdentity, list[str]]:
    """`deferred_store_deletes` over the cluster's directory; queues found with nothing
    left are taken off it (and put back if a delete was deferred meanwhile)."""
    [server] = pool.servers
    found: dict[QueueIdentity, list[str]] = {}
    try:
        members = cast(
            "set[str]", await pool.call(server, server.client.smembers, STORE_DELETE_QUEUES_KEY)
        )
        queue_keys = list(members)
        random.shuffle(queue_keys)
        for queue_key in queue_keys:
            if limit <= 0:
                break
            queue = queue_from_key(queue_key)
            if queue is None:
                await pool.call(server, server.client.srem, STORE_DELETE_QUEUES_KEY, queue_key)
                continue
            pending = QueueKeys(queue).store_deletes
            ids = cast("list[str]", await pool.call(server, server.client.srandmember, pending, limit))
            if ids:
                found[queue] = ids
                limit -= len(ids)
                continue
            await pool.call(server, server.client.srem, STORE_DELETE_QUEUES_KEY, queue_key)
            if await pool.call(server, server.client.scard, pending):
                await pool.call(server, server.client.sadd, STORE_DELETE_QUEUES_KEY, queue_key)
    except StorageError:
        log.debug("skipping deferred store deletes on %s: unreachable", server.label)
    return found
