"""The arrivals feed under Redis Cluster: sharded pub/sub on each listened queue's channel.

Owns, for a cluster, what `arrivals.py` owns for independent servers. There is no
cluster-wide channel worth having (a plain PUBLISH is copied to every node), so each queue
announces on its own shard channel `cqs:{<queue>}:arrivals`, which only the node owning the
queue's slot serves. A process subscribes to the channels of the queues its long polls wait
on (`ListenedQueues`: `listen` adds a queue until its listening lease lapses), not to all:
- each arrivals iterator holds one pub/sub connection per node it needs, and SSUBSCRIBEs a
  queue's channel there before the long poll's `listening` key is set;
- when Redis moves a slot (resharding, failover) it ends the subscriptions of the slot's
  channels (an unasked SUNSUBSCRIBE); a connection that breaks ends all of its node's. The
  channels are then subscribed again on the slot's current owner, after the slot map is read
  again, with a growing delay. Announcements meanwhile are missed: long polls re-check on
  their own timer, as for a lost subscription to one server.
The listened queues are also what this process sweeps (`sweep.py`): there is no per-server
`cqs:due` to read on a cluster. Imports redis and this package; never the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.feeds import end_feeds, next_announced, opened
from cqs.redis_cache.keys import QueueKeys

log = logging.getLogger(__name__)

RESUBSCRIBE_FIRST_DELAY_S = 0.05
RESUBSCRIBE_MAX_DELAY_S = 1.0


class ListenedQueues:
    """The queues this process's long polls wait on, each until its listening lease lapses."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[QueueIdentity, float] = {}

    def add(self, queue: QueueIdentity, ttl_ms: int) -> bool:
        """Note the queue until `ttl_ms` from now; True if it was not listened to before."""
        new = queue not in self._until
        self._until[queue] = max(self._until.get(queue, 0.0), self._clock() + ttl_ms / 1000)
        return new

    def current(self) -> list[QueueIdentity]:
        """The queues listened on now (a lapsed one is unsubscribed at the next `listen`)."""
        now = self._clock()
        return [queue for queue, until in self._until.items() if until > now]

    def lapse(self) -> list[QueueIdentity]:
        """Forget (and return) the queues whose lease has lapsed."""
        now = self._clock()
        lapsed = [queue for queue, until in self._until.items() if until <= now]
        for queue in lapsed:
            del self._until[queue]
        return lapsed


class _ShardFeed:
    """One arrivals iterator's subscriptions: a pub/sub connection per node, a reader each."""

    def __init__(self, cluster: RedisCluster, node_client: Callable[[str, int], Redis]) -> None:
        self._cluster = cluster
        self._node_client = node_client
        self.names: asyncio.Queue[str | None] = asyncio.Queue()
        self._pubsubs: dict[str, PubSub] = {}  # node name -> its pub/sub connection
        self._readers: dict[str, asyncio.Task[None]] = {}
        self._channels: set[str] = set()
        self._resubscribing: asyncio.Task[None] | None = None
        self._orphans: set[str] = set()  # channels to subscribe again (moved or broken)

    async def subscribe(self, channel: str) -> None:
        self._channels.add(channel)
        try:
            await self._subscribe_on_owner(channel)
        except Exception as exc:
            log.debug("arrivals: subscribing %s failed (%r); retrying", channel, exc)
            self._orphan([channel])

    async def unsubscribe(self, channel: str) -> None:
        self._channels.discard(channel)
        self._orphans.discard(channel)
        for pubsub in list(self._pubsubs.values()):  # a reader may drop one meanwhile
            if channel.encode() in pubsub.shard_channels or channel in pubsub.shard_channels:
                with contextlib.suppress(Exception):
                    await pubsub.sunsubscribe(channel)

    async def _subscribe_on_owner(self, channel: str) -> None:
        node = self._cluster.get_node_from_key(channel)
        if node is None:
            raise ConnectionError(f"no node owns the slot of {channel}")
        pubsub = self._pubsubs.get(node.name)
        if pubsub is None:
            pubsub = self._node_client(str(node.host), int(node.port)).pubsub()
            self._pubsubs[node.name] = pubsub
        await pubsub.ssubscribe(channel)
        if node.name not in self._readers or self._readers[node.name].done():
            self._readers[node.name] = asyncio.create_task(
                self._read(node.name, pubsub), name=f"cqs-shard-arrivals {node.name}"
            )

    async def _read(self, node_name: str, pubsub: PubSub) -> None:
        """Feed announcements from one node; on a moved slot or a broken connection, hand the
        channels back for subscribing again."""
        try:
            while True:
                message = await pubsub.get_message(timeout=None)
                if message is None:
                    continue
                kind = message["type"]
                if kind == "smessage":
                    self.names.put_nowait(message["data"])
                elif kind == "sunsubscribe" and message["channel"] in self._channels:
                    # Not asked for: the slot moved to another node.
                    self._orphan([message["channel"]])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("lost the arrivals subscriptions on node %s: %r; retrying", node_name, exc)
            if self._pubsubs.get(node_name) is pubsub:
                del self._pubsubs[node_name]
            lost = [
                channel.decode() if isinstance(channel, bytes) else str(channel)
                for channel in pubsub.shard_channels
            ]
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            self._orphan([channel for channel in lost if channel in self._channels])

    def _orphan(self, channels: list[str]) -> None:
        self._orphans.update(channels)
        if self._orphans and (self._resubscribing is None or self._resubscribing.done()):
            self._resubscribing = asyncio.create_task(self._resubscribe())

    async def _resubscribe(self) -> None:
        delay = RESUBSCRIBE_FIRST_DELAY_S
        while self._orphans:
            await asyncio.sleep(delay)
            with contextlib.suppress(Exception):
                await self._cluster.initialize()  # read the slot map again
            for channel in list(self._orphans):
                if channel not in self._channels:
                    self._orphans.discard(channel)
                    continue
                try:
                    await self._subscribe_on_owner(channel)
                    self._orphans.discard(channel)
                except Exception:
                    pass
            delay = min(delay * 2, RESUBSCRIBE_MAX_DELAY_S)

    async def stop(self) -> None:
        tasks = [*self._readers.values()]
        if self._resubscribing is not None:
            tasks.append(self._resubscribing)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for pubsub in list(self._pubsubs.values()):
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
        self._pubsubs.clear()


class ShardArrivals:
    """Every open arrivals iterator over one cluster, and the queues they listen on."""

    def __init__(self, cluster: RedisCluster, node_options: dict[str, Any]) -> None:
        self._cluster = cluster
        self._node_options = node_options
        self.listened = ListenedQueues()
        self._feeds: set[_ShardFeed] = set()
        self._clients: dict[tuple[str, int], Redis] = {}

    def _node_client(self, host: str, port: int) -> Redis:
        client = self._clients.get((host, port))
        if client is None:
            client = Redis(host=host, port=port, decode_responses=True, **self._node_options)
            self._clients[(host, port)] = client
        return client

    async def listen(self, queue: QueueIdentity, ttl_ms: int) -> None:
        """Subscribe every feed to the queue's channel (first listen only), and forget the
        queues whose long polls stopped listening."""
        for lapsed in self.listened.lapse():
            for feed in list(self._feeds):
                await feed.unsubscribe(QueueKeys(lapsed).arrivals)
        if self.listened.add(queue, ttl_ms):
            for feed in list(self._feeds):
                await feed.subscribe(QueueKeys(queue).arrivals)

    async def arrivals(self) -> AsyncIterator[QueueIdentity]:
        feed = _ShardFeed(self._cluster, self._node_client)
        async with opened(feed, self._feeds):
            for listened in self.listened.current():
                await feed.subscribe(QueueKeys(listened).arrivals)
            while (queue := await next_announced(feed.names)) is not None:
                yield queue

    async def close(self) -> None:
        await end_feeds(self._feeds)
        for client in self._clients.values():
            with contextlib.suppress(Exception):
                await client.aclose()
