"""What both arrivals feeds share (`arrivals.py` over servers, `shard_arrivals.py` under Redis
Cluster): keeping the open feeds, reading queue names off one, and ending them all when the cache
closes.

A feed is an object with `names`, an asyncio queue of announced queue keys in which None
ends the iterator, and `stop()`, which ends its subscriptions. Imports only `keys.py` and
the domain; never the service, aiohttp or cassandra.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Protocol, TypeVar

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.keys import queue_from_key


class Feed(Protocol):
    names: asyncio.Queue[str | None]

    async def stop(self) -> None: ...


F = TypeVar("F", bound=Feed)


@contextlib.asynccontextmanager
async def opened(feed: F, open_feeds: set[F]) -> AsyncIterator[F]:
    """`feed` among the open ones while the block runs (so closing the cache ends it), then
    out of them and stopped, however the block ends."""
    open_feeds.add(feed)
    try:
        yield feed
    finally:
        open_feeds.discard(feed)
        await feed.stop()


async def next_announced(names: asyncio.Queue[str | None]) -> QueueIdentity | None:
    """The next queue named on a feed, or None once the feed is ended (None in `names`)."""
    while (queue_key := await names.get()) is not None:
        queue = queue_from_key(queue_key)
        if queue is not None:  # None: published by a version before queue keys
            return queue
    return None


async def end_feeds(feeds: Iterable[Feed]) -> None:
    """End every open iterator, closing its subscriptions."""
    for feed in list(feeds):
        feed.names.put_nowait(None)
        await feed.stop()
