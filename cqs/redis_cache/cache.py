"""RedisMessageCache: the `MessageCache` port over one or more Redis servers.

Owns the cache's operations on one queue: each is one Lua script call (or one pipelined
read) on the server the ring picks for the queue. The rest of the adapter lives beside it:
the fill operations (state, lease, loads, settling store deliveries, reset) are
`fill_scripts.py`'s, inherited; how a call reaches its server and what its failure means
(`StorageBusy`, `StorageUnavailable` or `CacheUnreachable`) is `servers.py`'s; script
arguments and replies, `replies.py`'s; the pub/sub arrivals feed, `arrivals.py`'s; the
sweeps over every server, `sweep.py`'s; and the operators' reads, `inspector.py`'s. This
class delegates to them, so callers see one adapter. Imports model, errors and its own
package; never the service, aiohttp or cassandra.

Clocks: every method that takes `now_ms` uses it. `change_visibility` has no `now_ms` in
the port, so it reads the clock it was given (the service's, which computed
`visible_at_ms`). Leases (fill, sweep, listening) expire on the Redis server's clock.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from cqs.domain.model import (
    DEDUPLICATION_INTERVAL_MS,
    Admission,
    AdmissionOutcome,
    CachedMessageState,
    DeduplicationClaim,
    DeleteOutcome,
    FifoAdmission,
    Message,
    MessageCounts,
    QueueIdentity,
    ReceiveOutcome,
    VisibilityOutcome,
)
from cqs.redis_cache import sweep
from cqs.redis_cache.arrivals import Arrivals, shard_arrivals_of
from cqs.redis_cache.fill_scripts import FIFO_KEYS_TTL_MS, CacheFillScripts
from cqs.redis_cache.inspector import QueueStats, RedisInspector
from cqs.redis_cache.keys import (
    QueueKeys,
    arrivals_channel,
    script_keys,
)
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.replies import (
    decode_receive,
    dedup_field,
    encode_batch,
)
from cqs.redis_cache.servers import (
    BackendObserver,
    PoolObserver,
    RedisTls,
    ServerLimits,
)

TRIM_BATCH = 1000  # messages one trim_expired call drops at most (one short script run)
FORGET_BATCH = 1000  # ids per forget_store_deletes script run (Lua unpack has a stack limit)
RECEIVE_ATTEMPT_MS = DEDUPLICATION_INTERVAL_MS
# How long a FIFO send's admission holds its deduplication key before the send is stored:
# longer than any store write takes, so a retry never slips past a send still storing.
ADMISSION_LEASE_MS = 60_000


class RedisMessageCache(CacheFillScripts):
    """The hot copy of every queue, each queue on the server the ring picks for it."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        socket_timeout: float = 1.0,
        connect_timeout: float = 0.5,
        down_seconds: float = 1.0,
        max_connections: int = 64,
        pool_wait_seconds: float = 5.0,
        observe: BackendObserver | None = None,
        observe_pool: PoolObserver | None = None,
        clock: Callable[[], float] = time.time,
        tls: RedisTls | None = None,
    ) -> None:
        self._clock = clock  # the service's clock, for the calls whose port takes no now_ms
        limits = ServerLimits(
            socket_timeout, connect_timeout, down_seconds, max_connections, pool_wait_seconds
        )
        self._pool = ServerPool(urls, limits, observe=observe, observe_pool=observe_pool, tls=tls)
        self._arrivals = Arrivals(self._pool)
        # Under Redis Cluster: per-queue shard channels, and the queues this process listens on
        self._shard_arrivals = shard_arrivals_of(self._pool, limits)
        self._inspector = RedisInspector(self._pool)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def server_url_for(self, queue: QueueIdentity) -> str:
        """The URL (without credentials) of the Redis server holding the queue."""
        return self._pool.url_for(queue)

    async def _script(self, queue: QueueIdentity, script: str, args: Sequence[str | int]) -> Any:
        server = self._pool.holder_of(queue)
        registered = getattr(server.scripts, script)
        return await self._pool.run_script(
            server, registered, script_keys(queue, self._pool.clustered), args
        )

    def _channel(self, queue: QueueIdentity) -> str:
        return arrivals_channel(queue, self._pool.clustered)

    # --- messages -------------------------------------------------------------------------

    async def add(
        self,
        queue: QueueIdentity,
        messages: Sequence[Message],
        now_ms: int,
        queue_id: str = "",
        deduplication_keys: Mapping[str, str] | None = None,
    ) -> bool:
        """FIFO: `deduplication_keys` (message id -> key) name the admissions (`admit`) of
        these messages, which become stored entries kept for the deduplication interval."""
        fields = {
            message_id: dedup_field(queue_id, key)
            for message_id, key in (deduplication_keys or {}).items()
        }
        reply = await self._script(
            queue,
            "add",
            [now_ms, queue.key, self._channel(queue), DEDUPLICATION_INTERVAL_MS,
             *encode_batch(messages, fields)],
        )
        return bool(reply)

    # --- FIFO -------------------------------------------------------------------------------

    async def admit(
        self, queue: QueueIdentity, queue_id: str, claims: Sequence[DeduplicationClaim], now_ms: int
    ) -> FifoAdmission:
        """Look up the claims' deduplication keys and number the new ones; an empty key
        numbers its message without deduplicating it."""
        args: list[str | int] = [now_ms, ADMISSION_LEASE_MS, FIFO_KEYS_TTL_MS]
        for claim in claims:
            key, message_id, also = DeduplicationClaim(*claim)
            args += [
                dedup_field(queue_id, key) if key else "",  # "": number only
                dedup_field(queue_id, also) if key and also else "",
                message_id,
            ]
        reply = await self._script(queue, "admit", args)
        outcomes = [
            Admission(AdmissionOutcome(str(outcome)), str(message_id), int(sequence))
            for outcome, message_id, sequence in zip(
                reply[1::3], reply[2::3], reply[3::3], strict=True
            )
        ]
        return FifoAdmission(cache_ready=bool(int(reply[0])), outcomes=outcomes)

    async def abandon(
        self, queue: QueueIdentity, queue_id: str, admitted: Sequence[DeduplicationClaim]
    ) -> None:
        """Release the admissions (deduplication key, message id) of a send that failed."""
        args: list[str | int] = []
        for key, message_id, *_ in admitted:
            args += [dedup_field(queue_id, key), message_id]
        if args:
            await self._script(queue, "abandon", args)

    async def receive_fifo(
        self,
        queue: QueueIdentity,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int,
        attempt_id: str | None,
    ) -> ReceiveOutcome | None:
        return await self._receive(
            queue, "receive_fifo", (now_ms, visibility_timeout_ms, retention_ms), max_count,
            nonces, max_receive_count, attempt_id or "", RECEIVE_ATTEMPT_MS,
        )

    # --- arrivals (`arrivals.py`) ---------------------------------------------------------

    async def listen(self, queue: QueueIdentity, ttl_ms: int) -> None:
        if self._shard_arrivals is not None:  # subscribed before a send can see `listening`
            await self._shard_arrivals.listen(queue, ttl_ms)
        server = self._pool.holder_of(queue)
        key = QueueKeys(queue).listening
        await self._pool.call(server, server.client.set, key, "1", px=max(1, ttl_ms))

    def arrivals(self) -> AsyncIterator[QueueIdentity]:
        if self._shard_arrivals is not None:
            return self._shard_arrivals.arrivals()
        return self._arrivals.arrivals()

    # --- receive, delete, visibility, counts ----------------------------------------------

    async def trim_expired(self, queue: QueueIdentity, now_ms: int, retention_ms: int) -> int:
        """Drops at most TRIM_BATCH messages per call; call again while it returns that many."""
        reply = await self._script(queue, "trim_expired", [now_ms, retention_ms, TRIM_BATCH])
        return int(reply)

    async def receive(
        self,
        queue: QueueIdentity,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int = 0,
    ) -> ReceiveOutcome | None:
        return await self._receive(
            queue, "receive", (now_ms, visibility_timeout_ms, retention_ms), max_count, nonces,
            max_receive_count,
        )

    async def _receive(
        self, queue: QueueIdentity, script: str, times_ms: tuple[int, int, int],
        max_count: int, nonces: Sequence[str], max_receive_count: int, *own_args: str | int,
    ) -> ReceiveOutcome | None:
        """Run a receive script. Both take the same ARGV[1..7] (`times_ms`: now, visibility
        timeout and retention; then the count, the queue, its arrivals channel and the max
        receive count), then `own_args`, then one receipt nonce per message to hand out."""
        count = max(0, min(max_count, len(nonces)))
        reply = await self._script(
            queue,
            script,
            [
                *times_ms, count, queue.key, self._channel(queue), max(0, max_receive_count),
                *own_args, *nonces[:count],
            ],
        )
        return decode_receive(reply)

    async def delete(
        self, queue: QueueIdentity, message_id: str, receipt_nonce: str
    ) -> DeleteOutcome:
        [outcome] = await self.delete_many(queue, [(message_id, receipt_nonce)])
        return outcome

    async def delete_many(
        self, queue: QueueIdentity, handles: Sequence[tuple[str, str]]
    ) -> list[DeleteOutcome]:
        if not handles:
            return []
        args: list[str | int] = [self._now_ms()]
        for message_id, receipt_nonce in handles:
            args += [message_id, receipt_nonce]
        reply = await self._script(queue, "delete", args)
        return [DeleteOutcome(outcome) for outcome in reply]

    async def change_visibility(
        self, queue: QueueIdentity, message_id: str, receipt_nonce: str, visible_at_ms: int
    ) -> VisibilityOutcome:
        reply = await self._script(
            queue,
            "change_visibility",
            [message_id, receipt_nonce, visible_at_ms, self._now_ms(), queue.key,
             self._channel(queue)],
        )
        return VisibilityOutcome(reply)

    async def counts(self, queue: QueueIdentity, now_ms: int) -> MessageCounts:
        """Hidden messages already due count as visible: the next receive would see them."""
        server = self._pool.holder_of(queue)
        keys = QueueKeys(queue)

        async def read() -> list[int]:
            pipeline = server.client.pipeline(transaction=True)
            if keys.fifo_queue:
                pipeline.zcard(keys.visible)
            else:
                pipeline.llen(keys.visible)
            pipeline.zcount(keys.inflight, "-inf", now_ms)
            pipeline.zcard(keys.inflight)
            pipeline.zcount(keys.delayed, "-inf", now_ms)
            pipeline.zcard(keys.delayed)
            return [int(value) for value in await pipeline.execute()]

        visible, inflight_due, inflight, delayed_due, delayed = await self._pool.call(server, read)
        return MessageCounts(
            visible=visible + inflight_due + delayed_due,
            in_flight=inflight - inflight_due,
            delayed=delayed - delayed_due,
        )

    async def next_due_ms(self, queue: QueueIdentity) -> int | None:
        server = self._pool.holder_of(queue)
        keys = QueueKeys(queue)

        async def read() -> list[list[tuple[str, float]]]:
            pipeline = server.client.pipeline(transaction=True)
            pipeline.zrange(keys.inflight, 0, 0, withscores=True)
            pipeline.zrange(keys.delayed, 0, 0, withscores=True)
            return list(await pipeline.execute())

        heads = await self._pool.call(server, read)
        scores = [int(score) for head in heads for _member, score in head]
        return min(scores) if scores else None

    async def purge(self, queue: QueueIdentity) -> None:
        await self._script(queue, "purge", [queue.key])

    async def drop(self, queue: QueueIdentity) -> None:
        await self._script(queue, "drop", [queue.key])

    # --- deferred store deletes -----------------------------------------------------------

    async def defer_store_delete(self, queue: QueueIdentity, message_id: str) -> None:
        await self._script(queue, "defer_store_delete", [queue.key, message_id])
        if self._pool.clustered:  # the directory is in another slot: written after the script
            await sweep.note_store_deletes(self._pool, queue)

    async def deferred_store_deletes(self, limit: int) -> dict[QueueIdentity, list[str]]:
        if self._pool.clustered:
            return await sweep.cluster_deferred_store_deletes(self._pool, limit)
        return await sweep.deferred_store_deletes(self._pool, limit)

    async def forget_store_deletes(self, queue: QueueIdentity, message_ids: Sequence[str]) -> None:
        for start in range(0, max(1, len(message_ids)), FORGET_BATCH):
            batch = message_ids[start : start + FORGET_BATCH]
            await self._script(queue, "forget_store_deletes", [queue.key, *batch])

    # --- revisibility (`sweep.py`) --------------------------------------------------------

    async def release_due(
        self, now_ms: int, limit: int, sweeper: str, lease_ms: int
    ) -> list[QueueIdentity]:
        if self._shard_arrivals is not None:
            return await sweep.release_listened_due(
                self._pool, self._shard_arrivals.listened.current(), now_ms, limit
            )
        return await sweep.release_due(self._pool, now_ms, limit, sweeper, lease_ms)

    async def close(self) -> None:
        """Ends every `arrivals()` iterator (closing its subscriptions), then the clients."""
        await self._arrivals.close()
        if self._shard_arrivals is not None:
            await self._shard_arrivals.close()
        await self._pool.close()

    # --- for operators (read only; `inspector.py`) ----------------------------------------

    async def queue_stats(
        self, queues: Sequence[QueueIdentity]
    ) -> dict[QueueIdentity, QueueStats]:
        return await self._inspector.queue_stats(queues)

    async def ping_servers(self) -> dict[str, bool]:
        return await self._inspector.ping_servers()

    async def eviction_policies(self) -> dict[str, str | None]:
        return await self._inspector.eviction_policies()

    async def clock_offset(self) -> float | None:
        return await self._inspector.clock_offset()

    def server_label_for(self, queue: QueueIdentity) -> str:
        """The metrics label (`host:port/db`, no password) of the server holding the queue."""
        return self._inspector.server_label_for(queue)

    async def describe_servers(self, now_ms: int) -> dict[str, dict[str, str]]:
        return await self._inspector.describe_servers(now_ms)

    async def message_states(
        self, queue: QueueIdentity, message_ids: Sequence[str], now_ms: int
    ) -> dict[str, CachedMessageState]:
        return await self._inspector.message_states(queue, message_ids, now_ms)
