"""Read-only views of the cache for operators: the stats page, readiness and the console.

Owns `RedisInspector` (queue figures in bulk, server descriptions, per-message states,
pings, eviction policies, the first server's clock, which server holds a queue) and
`QueueStats`. Nothing here changes Redis: these reads are pipelined and never run a
script. Imports redis (through `servers.py`), the model, the errors and its own package;
never the service, aiohttp or cassandra.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis.exceptions import ResponseError

from cqs.domain.errors import StorageBusy, StorageError
from cqs.domain.model import (
    CachedMessageState,
    CacheState,
    MessagePlace,
    QueueIdentity,
)
from cqs.redis_cache.keys import DUE_KEY, STATE_READY, SWEEPER_KEY, QueueKeys
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.replies import sent_ms_of
from cqs.redis_cache.servers import RedisServer

# INFO fields shown to operators per server.
_DESCRIBED_INFO = (
    "redis_version", "uptime_in_seconds", "used_memory", "used_memory_human",
    "used_memory_peak_human", "maxmemory", "maxmemory_human", "connected_clients", "role",
)


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue's figures as its Redis holds them (UNAVAILABLE: the server did not answer).

    Counts are the cache's: exact while READY, partial while FILLING, zero while ABSENT.
    Hidden messages already due count as in flight or delayed until the next sweep.
    """

    state: CacheState
    visible: int = 0
    in_flight: int = 0
    delayed: int = 0
    oldest_visible_sent_ms: int | None = None  # the message at the head of the visible list


class RedisInspector:
    """Operator reads over the servers of one pool."""

    def __init__(self, pool: ServerPool) -> None:
        self._pool = pool

    def server_label_for(self, queue: QueueIdentity) -> str:
        """The label (`host:port/db`, no password) of the server holding the queue."""
        return self._pool.holder_of(queue).label

    async def queue_stats(self, queues: Sequence[QueueIdentity]) -> dict[QueueIdentity, QueueStats]:
        """Figures of many queues at once: one pipelined round trip per server (GET state,
        LLEN, ZCARD, ZCARD, LINDEX 0 per queue; the oldest visible message's send time is
        read from its id, so no payload is touched). Queues of an unreachable server come
        back UNAVAILABLE."""
        by_server: dict[RedisServer, list[QueueIdentity]] = {}
        for queue in queues:
            by_server.setdefault(self._pool.holder_of(queue), []).append(queue)
        found: dict[QueueIdentity, QueueStats] = {}
        for part in await asyncio.gather(
            *(self._queue_stats_on(server, held) for server, held in by_server.items())
        ):
            found.update(part)
        return found

    async def _queue_stats_on(
        self, server: RedisServer, queues: Sequence[QueueIdentity]
    ) -> dict[QueueIdentity, QueueStats]:
        async def read() -> list[Any]:
            pipeline = server.client.pipeline(transaction=False)
            for queue in queues:
                keys = QueueKeys(queue)
                pipeline.get(keys.state)
                if keys.fifo_queue:
                    pipeline.zcard(keys.visible)
                else:
                    pipeline.llen(keys.visible)
                pipeline.zcard(keys.inflight)
                pipeline.zcard(keys.delayed)
                if keys.fifo_queue:  # the lowest sequence number: the oldest send
                    pipeline.zrange(keys.visible, 0, 0)
                else:
                    pipeline.lindex(keys.visible, 0)
            return list(await pipeline.execute())

        try:
            replies = await self._pool.call(server, read) if queues else []
        except StorageError:
            return {queue: QueueStats(CacheState.UNAVAILABLE) for queue in queues}
        found: dict[QueueIdentity, QueueStats] = {}
        for index, queue in enumerate(queues):
            state, visible, in_flight, delayed, head = replies[index * 5 : index * 5 + 5]
            if isinstance(head, list):  # a FIFO queue's ZRANGE
                head = head[0] if head else None
            if state is None:
                cache_state = CacheState.ABSENT
            elif state == STATE_READY:
                cache_state = CacheState.READY
            else:
                cache_state = CacheState.FILLING
            found[queue] = QueueStats(
                cache_state, int(visible), int(in_flight), int(delayed), sent_ms_of(head)
            )
        return found

    async def ping_servers(self) -> dict[str, bool]:
        """Whether each server answers PING, by server label (no password in it)."""

        async def ping(server: RedisServer) -> bool:
            try:
                await self._pool.call(server, server.client.ping)
            except StorageBusy:  # this process is loaded; the server is up
                return True
            except StorageError:
                return False
            return True

        servers = self._pool.servers
        answers = await asyncio.gather(*(ping(server) for server in servers))
        return {server.label: up for server, up in zip(servers, answers, strict=True)}

    async def clock_offset(self, samples: int = 5) -> float | None:
        """Seconds the first server's clock (TIME) is ahead of this host's, from the
        quickest of `samples` round trips (its midpoint); None if it does not answer."""
        server = self._pool.servers[0]
        best: tuple[float, float] | None = None  # (round trip, offset)
        for _ in range(samples):
            before = time.time()
            try:
                reply = await self._pool.call(server, server.client.time)
            except (StorageError, ResponseError):  # down, or TIME renamed (managed services)
                return None
            after = time.time()
            if isinstance(reply, dict):  # a cluster client may answer per node
                reply = next(iter(reply.values()), None)
            try:
                seconds, microseconds = reply
                offset = float(seconds) + float(microseconds) / 1e6 - (before + after) / 2
            except (TypeError, ValueError):
                return None
            if best is None or after - before < best[0]:
                best = (after - before, offset)
        return None if best is None else best[1]

    async def eviction_policies(self) -> dict[str, str | None]:
        """Each server's `maxmemory-policy` by server label; None where it cannot be read
        (CONFIG refused or renamed, as managed services may, or the server not answering)."""

        async def read(server: RedisServer) -> str | None:
            try:
                reply = await self._pool.call(
                    server, server.client.config_get, "maxmemory-policy"
                )
            except (StorageError, ResponseError):
                return None
            policy = reply.get("maxmemory-policy")
            return str(policy) if policy is not None else None

        if self._pool.clustered:
            return await self._cluster_eviction_policies()
        servers = self._pool.servers
        policies = await asyncio.gather(*(read(server) for server in servers))
        return {server.label: p for server, p in zip(servers, policies, strict=True)}

    async def _cluster_eviction_policies(self) -> dict[str, str | None]:
        """Every node's policy, replicas too (a promoted replica must not evict either),
        by `host:port`; the cluster's label with None when CONFIG cannot be read."""
        [server] = self._pool.servers
        try:
            reply = await self._pool.call(
                server, server.client.config_get, "maxmemory-policy", target_nodes="all"
            )
        except (StorageError, ResponseError):
            return {server.label: None}
        by_node = cast("dict[str, dict[str, str]]", reply)
        return {node: answer.get("maxmemory-policy") for node, answer in by_node.items()}

    async def describe_servers(self, now_ms: int) -> dict[str, dict[str, str]]:
        servers = self._pool.servers
        described = await asyncio.gather(
            *(self._describe_server(server, now_ms) for server in servers)
        )
        return {s.label: d for s, d in zip(servers, described, strict=True)}

    async def _describe_server(self, server: RedisServer, now_ms: int) -> dict[str, str]:
        async def read() -> tuple[dict[str, Any], list[Any]]:
            info = await server.client.info()
            pipeline = server.client.pipeline(transaction=False)
            pipeline.zcount(DUE_KEY, "-inf", now_ms)
            pipeline.zrange(DUE_KEY, 0, 0, withscores=True)
            pipeline.get(SWEEPER_KEY)
            return info, list(await pipeline.execute())

        pool = server.pool_figures()
        figures = {
            "pool_in_use": str(pool.in_use),
            "pool_waiting": str(pool.waiting),
            "pool_size": str(pool.size),
        }
        try:
            info, (due_queues, earliest, sweeper) = await self._pool.call(server, read)
        except StorageError:
            return figures
        described: dict[str, str] = figures | {
            name: str(info[name]) for name in _DESCRIBED_INFO if name in info
        }
        described["due_queues"] = str(int(due_queues))
        if earliest:
            described["earliest_due_ms"] = str(int(earliest[0][1]))
        if sweeper:
            described["sweeper"] = str(sweeper)
        return described

    async def message_states(
        self, queue: QueueIdentity, message_ids: Sequence[str], now_ms: int
    ) -> dict[str, CachedMessageState]:
        """Where each cached message is, its receive count and first receive ms; ids not in
        the cache are left out."""
        server = self._pool.holder_of(queue)
        keys = QueueKeys(queue)

        async def read() -> list[Any]:
            pipeline = server.client.pipeline(transaction=True)
            for message_id in message_ids:
                pipeline.hget(keys.receipt, message_id)
                pipeline.zscore(keys.inflight, message_id)
                pipeline.zscore(keys.delayed, message_id)
            return list(await pipeline.execute())

        replies = await self._pool.call(server, read) if message_ids else []
        states: dict[str, CachedMessageState] = {}
        for index, message_id in enumerate(message_ids):
            receipt, hidden_until, delayed_until = replies[index * 3 : index * 3 + 3]
            if receipt is None:
                continue
            _sent, receive_count, first_receive_ms = str(receipt).split(":")[:3]
            if hidden_until is not None and float(hidden_until) > now_ms:
                where = MessagePlace.IN_FLIGHT
            elif delayed_until is not None and float(delayed_until) > now_ms:
                where = MessagePlace.DELAYED
            else:
                where = MessagePlace.VISIBLE
            states[message_id] = CachedMessageState(where, int(receive_count), int(first_receive_ms))
        return states
