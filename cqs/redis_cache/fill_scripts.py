"""CacheFillScripts: the fill half of the Redis cache (the `CacheFill` port).

Owns the calls that take a queue's cache from ABSENT through FILLING to READY: its state,
the fill lease (begin, renew, finish), loading pages of stored messages and FIFO
deduplication records, and settling deliveries handed out from the store with the cache.
Each is one Lua script on the queue's server. `RedisMessageCache` inherits them and
supplies how a script reaches its server. Imports model and its own package; never the
service, aiohttp or cassandra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from cqs.domain.model import (
    DEDUPLICATION_INTERVAL_MS,
    CacheState,
    Deduplication,
    Message,
    QueueIdentity,
)
from cqs.redis_cache.keys import STATE_FILLING_PREFIX, STATE_READY, QueueKeys, filling_state
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.replies import dedup_field, encode_load_batch

# A queue's deduplication and sequence keys lapse as a whole after this long without sends.
FIFO_KEYS_TTL_MS = 2 * DEDUPLICATION_INTERVAL_MS
RESET_BATCH = 1000  # deleted ids per reset script run


class CacheFillScripts:
    """The fill operations; the class that inherits them runs scripts (`_script`)."""

    _pool: ServerPool

    async def _script(
        self, queue: QueueIdentity, script: str, args: Sequence[str | int]
    ) -> Any:
        raise NotImplementedError

    def _now_ms(self) -> int:
        raise NotImplementedError

    async def state(self, queue: QueueIdentity) -> CacheState:
        server = self._pool.holder_of(queue)
        key = QueueKeys(queue).state
        value = cast("str | None", await self._pool.call(server, server.client.get, key))
        if value is None:
            return CacheState.ABSENT
        if value == STATE_READY:
            return CacheState.READY
        if value.startswith(STATE_FILLING_PREFIX):
            return CacheState.FILLING
        raise ValueError(f"unexpected cache state {value!r} for queue {queue.key!r}")

    async def begin_fill(self, queue: QueueIdentity, owner: str, lease_ms: int) -> bool:
        reply = await self._script(
            queue, "begin_fill", [filling_state(owner), lease_ms, queue.key]
        )
        return bool(reply)

    async def renew_fill(self, queue: QueueIdentity, owner: str, lease_ms: int) -> bool:
        reply = await self._script(queue, "renew_fill", [filling_state(owner), lease_ms])
        return bool(reply)

    async def load(
        self,
        queue: QueueIdentity,
        owner: str,
        messages: Sequence[Message],
        now_ms: int,
        hidden_until: Mapping[str, int],
    ) -> bool:
        """Runs the script even for no messages, so the reply still tells whether `owner`
        holds the fill lease."""
        reply = await self._script(
            queue,
            "load",
            [now_ms, queue.key, filling_state(owner), *encode_load_batch(messages, hidden_until)],
        )
        return int(reply) >= 0

    async def finish_fill(
        self,
        queue: QueueIdentity,
        owner: str,
        now_ms: int | None = None,
        hidden_until: Mapping[str, int] | None = None,
        gone: Sequence[str] = (),
    ) -> bool:
        args: list[str | int] = [
            filling_state(owner), self._now_ms() if now_ms is None else now_ms, queue.key,
            len(gone), *gone,
        ]
        for message_id, until in (hidden_until or {}).items():
            args.extend((message_id, until))
        reply = await self._script(queue, "finish_fill", args)
        return bool(reply)

    async def in_flight_ids(self, queue: QueueIdentity) -> list[str]:
        server = self._pool.holder_of(queue)
        key = QueueKeys(queue).inflight
        ids = await self._pool.call(server, server.client.zrange, key, 0, -1)
        return [item.decode() if isinstance(item, bytes) else str(item) for item in ids]

    async def reset(self, queue: QueueIdentity, deleted: Sequence[str] = ()) -> None:
        """Make the cache ABSENT to be refilled, first removing `deleted` (in batches: a
        script's arguments stay short)."""
        batches = [deleted[start : start + RESET_BATCH]
                   for start in range(0, len(deleted), RESET_BATCH)] or [()]
        for number, batch in enumerate(batches, start=1):
            last = 1 if number == len(batches) else 0
            await self._script(queue, "reset", [queue.key, last, *batch])

    async def hide_store_deliveries(
        self, queue: QueueIdentity, now_ms: int, hidden_until: Mapping[str, int]
    ) -> set[str]:
        args: list[str | int] = [now_ms, queue.key]
        for message_id, until in hidden_until.items():
            args.extend((message_id, until))
        allowed = await self._script(queue, "hide_store_deliveries", args)
        return {item.decode() if isinstance(item, bytes) else str(item) for item in allowed}

    async def load_deduplications(
        self, queue: QueueIdentity, queue_id: str, records: Sequence[Deduplication], now_ms: int
    ) -> int:
        args: list[str | int] = [now_ms, FIFO_KEYS_TTL_MS]
        for record in records:
            args += [
                dedup_field(queue_id, record.key), record.message_id, record.sequence_number,
                record.expires_ms,
            ]
        added = 0
        for start in range(0, len(args) - 2, 4 * 500):
            chunk = args[2 + start : 2 + start + 4 * 500]
            added += int(await self._script(queue, "load_deduplications", [*args[:2], *chunk]))
        return added
