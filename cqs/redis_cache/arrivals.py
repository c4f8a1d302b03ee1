"""The arrivals feed: names of queues that got messages a long poll listens for, over pub/sub.

Owns the subscriptions behind `RedisMessageCache.arrivals()`: each iterator holds one
pub/sub connection per server on the server's arrivals channel; a lost connection is
retried with a growing delay, and names published meanwhile are missed (long polls must
still re-check on their own timer). Imports redis (through `servers.py`) and its own
package; never the service, aiohttp or cassandra. Under Redis Cluster the feed is
`shard_arrivals.py`'s instead (`shard_arrivals_of`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.feeds import end_feeds, next_announced, opened
from cqs.redis_cache.keys import ARRIVALS_CHANNEL
from cqs.redis_cache.managed_servers import ClusterServer
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.servers import RedisServer, ServerLimits
from cqs.redis_cache.shard_arrivals import ShardArrivals

log = logging.getLogger(__name__)

RESUBSCRIBE_FIRST_DELAY_S = 0.05
RESUBSCRIBE_MAX_DELAY_S = 1.0


class _ArrivalFeed:
    """The subscriptions behind one `arrivals()` iterator: a task per server, one queue.

    None in `names` ends the iterator (the cache is closing).
    """

    def __init__(self) -> None:
        self.names: asyncio.Queue[str | None] = asyncio.Queue()
        self.tasks: list[asyncio.Task[None]] = []

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class Arrivals:
    """Every open arrivals iterator over one server pool, so closing the cache ends them."""

    def __init__(self, pool: ServerPool) -> None:
        self._pool = pool
        self._feeds: set[_ArrivalFeed] = set()

    async def arrivals(self) -> AsyncIterator[QueueIdentity]:
        feed = _ArrivalFeed()
        feed.tasks = [
            asyncio.create_task(
                _follow_arrivals(server, feed.names), name=f"cqs-arrivals {server.label}"
            )
            for server in self._pool.servers
        ]
        async with opened(feed, self._feeds):
            while (queue := await next_announced(feed.names)) is not None:
                yield queue

    async def close(self) -> None:
        """End every open iterator, closing its subscriptions."""
        await end_feeds(self._feeds)


async def _follow_arrivals(server: RedisServer, names: asyncio.Queue[str | None]) -> None:
    """Subscribe to `server`'s arrivals channel and feed `names` until cancelled."""
    delay = RESUBSCRIBE_FIRST_DELAY_S
    in_outage = False
    while True:
        pubsub = server.feed_client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(ARRIVALS_CHANNEL)
            if in_outage:
                log.warning("arrivals from Redis server %s are heard again", server.label)
                in_outage = False
            delay = RESUBSCRIBE_FIRST_DELAY_S
            while True:
                message = await pubsub.get_message(timeout=None)  # blocks until one comes
                if message is not None and message["type"] == "message":
                    names.put_nowait(message["data"])
        except Exception as exc:  # whatever broke, subscribe again (never end the feed)
            if not in_outage:
                log.warning(
                    "lost the arrivals subscription to Redis server %s: %r; retrying",
                    server.label,
                    exc,
                )
                in_outage = True
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
        await asyncio.sleep(delay)
        delay = min(delay * 2, RESUBSCRIBE_MAX_DELAY_S)


def shard_arrivals_of(pool: ServerPool, limits: ServerLimits) -> ShardArrivals | None:
    """The sharded arrivals of a cluster pool; None for servers or a Sentinel primary."""
    if not pool.clustered:
        return None
    [server] = pool.servers
    assert isinstance(server, ClusterServer)
    return ShardArrivals(
        server.cluster,
        {
            "username": pool.topology.username,
            "password": pool.topology.password,
            "socket_connect_timeout": limits.connect_timeout,
            "socket_timeout": limits.socket_timeout,
            "retry": Retry(NoBackoff(), 0),  # a broken subscription is handled by the feed
            "client_name": "cqs-arrivals",
        },
    )
