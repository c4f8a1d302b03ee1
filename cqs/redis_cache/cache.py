"""RedisMessageCache: the `MessageCache` port over one or more Redis servers.

Owns the mapping of queues to servers (a consistent-hash ring over the server URLs), the
calls into the Lua scripts, the decoding of their replies into model values, and the
translation of redis-py failures into `StorageUnavailable` (once, here). Imports model,
errors and its own package; never the service, aiohttp or cassandra.

Clocks: every method that takes `now_ms` uses it. `change_visibility` has no `now_ms` in
the port, so it reads the wall clock (`time.time()`), the same clock the service uses to
compute `visible_at_ms`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from cqs.errors import StorageUnavailable
from cqs.message_codec import decode_message, encode_message
from cqs.model import (
    CacheState,
    DeleteOutcome,
    Delivery,
    Message,
    MessageCounts,
    VisibilityOutcome,
)
from cqs.redis_cache.keys import (
    DUE_KEY,
    STATE_FILLING_PREFIX,
    STATE_READY,
    QueueKeys,
    filling_state,
)
from cqs.redis_cache.ring import HashRing
from cqs.redis_cache.scripts import QueueScripts, register_scripts

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

# The server could not be reached or did not answer in time: trips the breaker.
_UNREACHABLE: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # includes BusyLoadingError (server still starting)
    RedisTimeoutError,
    OSError,  # includes the builtin TimeoutError that asyncio timeouts raise
)
# The server answered but cannot take writes now: the client may retry, the server is up.
_REFUSING: tuple[type[BaseException], ...] = (OutOfMemoryError, ReadOnlyError)

UNAVAILABLE_MESSAGE = "The message cache is temporarily unavailable; retry the request."


class ServerBreaker:
    """Remembers a server as down for a while after a failure, so requests fail fast.

    Closed: calls go through. After a failure: open for `down_seconds` (calls raise at
    once). Then the next call tries the server again; success closes the breaker.
    """

    def __init__(
        self,
        server: str,
        down_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._server = server
        self._down_seconds = down_seconds
        self._clock = clock
        self._down_until: float | None = None

    @property
    def is_down(self) -> bool:
        return self._down_until is not None and self._clock() < self._down_until

    def check(self) -> None:
        """Raise StorageUnavailable while the server is remembered as down."""
        if self.is_down:
            raise StorageUnavailable(UNAVAILABLE_MESSAGE)

    def record_failure(self, error: BaseException) -> None:
        if self._down_until is None:
            log.warning("Redis server %s is unreachable: %r", self._server, error)
        self._down_until = self._clock() + self._down_seconds

    def record_success(self) -> None:
        if self._down_until is not None:
            log.warning("Redis server %s is reachable again", self._server)
        self._down_until = None


@dataclass(frozen=True, slots=True)
class _Server:
    url: str
    client: Redis
    scripts: QueueScripts
    breaker: ServerBreaker


def _encode_batch(messages: Sequence[Message]) -> list[str | int]:
    """Four ARGV values per message, as add.lua and load.lua read them."""
    values: list[str | int] = []
    for message in messages:
        values += [
            message.message_id,
            message.sent_timestamp_ms,
            message.visible_at_ms,
            encode_message(message),
        ]
    return values


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class RedisMessageCache:
    """The hot copy of every queue, each queue on the server the ring picks for it."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        socket_timeout: float = 1.0,
        connect_timeout: float = 0.5,
        down_seconds: float = 1.0,
    ) -> None:
        self._ring = HashRing(urls)
        self._servers: dict[str, _Server] = {}
        for url in urls:
            client: Redis = Redis.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=connect_timeout,
                health_check_interval=0,
                retry=Retry(NoBackoff(), 0),  # no retries: the service decides what to do
                decode_responses=True,
                client_name="cqs",
            )
            self._servers[url] = _Server(
                url=url,
                client=client,
                scripts=register_scripts(client),
                breaker=ServerBreaker(url, down_seconds),
            )

    def server_for(self, queue_name: str) -> str:
        """The URL of the Redis server holding `queue_name`."""
        return self._ring.node_for(queue_name)

    # --- plumbing -------------------------------------------------------------------------

    async def _call(
        self,
        server: _Server,
        operation: Callable[P, Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run one Redis operation on `server`, translating its failures."""
        server.breaker.check()
        try:
            result = await operation(*args, **kwargs)
        except _UNREACHABLE as exc:
            server.breaker.record_failure(exc)
            raise StorageUnavailable(UNAVAILABLE_MESSAGE) from exc
        except _REFUSING as exc:
            raise StorageUnavailable(UNAVAILABLE_MESSAGE) from exc
        server.breaker.record_success()
        return result

    async def _script(self, queue_name: str, script: str, args: Sequence[str | int]) -> Any:
        server = self._servers[self.server_for(queue_name)]
        registered = getattr(server.scripts, script)
        keys = QueueKeys(queue_name).script_keys()
        return await self._call(server, registered, keys=keys, args=list(args))

    # --- fill -----------------------------------------------------------------------------

    async def state(self, queue_name: str) -> CacheState:
        server = self._servers[self.server_for(queue_name)]
        key = QueueKeys(queue_name).state
        value = cast("str | None", await self._call(server, server.client.get, key))
        if value is None:
            return CacheState.ABSENT
        if value == STATE_READY:
            return CacheState.READY
        if value.startswith(STATE_FILLING_PREFIX):
            return CacheState.FILLING
        raise ValueError(f"unexpected cache state {value!r} for queue {queue_name!r}")

    async def begin_fill(self, queue_name: str, owner: str, lease_ms: int) -> bool:
        reply = await self._script(
            queue_name, "begin_fill", [filling_state(owner), lease_ms, queue_name]
        )
        return bool(reply)

    async def renew_fill(self, queue_name: str, owner: str, lease_ms: int) -> bool:
        reply = await self._script(queue_name, "renew_fill", [filling_state(owner), lease_ms])
        return bool(reply)

    async def load(self, queue_name: str, messages: Sequence[Message], now_ms: int) -> None:
        if messages:
            await self._script(queue_name, "load", [now_ms, queue_name, *_encode_batch(messages)])

    async def finish_fill(self, queue_name: str, owner: str) -> bool:
        reply = await self._script(queue_name, "finish_fill", [filling_state(owner)])
        return bool(reply)

    # --- messages -------------------------------------------------------------------------

    async def add(self, queue_name: str, messages: Sequence[Message], now_ms: int) -> bool:
        reply = await self._script(queue_name, "add", [now_ms, queue_name, *_encode_batch(messages)])
        return bool(reply)

    async def receive(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
    ) -> list[Delivery] | None:
        count = max(0, min(max_count, len(nonces)))
        reply = await self._script(
            queue_name,
            "receive",
            [now_ms, visibility_timeout_ms, retention_ms, count, queue_name, *nonces[:count]],
        )
        if reply is None:
            return None
        deliveries: list[Delivery] = []
        for index in range(0, len(reply), 4):
            _message_id, payload, receive_count, first_receive_ms = reply[index : index + 4]
            deliveries.append(
                Delivery(
                    message=decode_message(payload),
                    receive_count=int(receive_count),
                    first_receive_timestamp_ms=int(first_receive_ms),
                    receipt_nonce=nonces[index // 4],
                )
            )
        return deliveries

    async def delete(self, queue_name: str, message_id: str, receipt_nonce: str) -> DeleteOutcome:
        reply = await self._script(queue_name, "delete", [message_id, receipt_nonce])
        return DeleteOutcome(reply)

    async def change_visibility(
        self, queue_name: str, message_id: str, receipt_nonce: str, visible_at_ms: int
    ) -> VisibilityOutcome:
        reply = await self._script(
            queue_name,
            "change_visibility",
            [message_id, receipt_nonce, visible_at_ms, _wall_clock_ms(), queue_name],
        )
        return VisibilityOutcome(reply)

    async def counts(self, queue_name: str, now_ms: int) -> MessageCounts:
        """Hidden messages already due count as visible: the next receive would see them."""
        server = self._servers[self.server_for(queue_name)]
        keys = QueueKeys(queue_name)

        async def read() -> list[int]:
            pipeline = server.client.pipeline(transaction=True)
            pipeline.llen(keys.visible)
            pipeline.zcount(keys.inflight, "-inf", now_ms)
            pipeline.zcard(keys.inflight)
            pipeline.zcount(keys.delayed, "-inf", now_ms)
            pipeline.zcard(keys.delayed)
            return [int(value) for value in await pipeline.execute()]

        visible, inflight_due, inflight, delayed_due, delayed = await self._call(server, read)
        return MessageCounts(
            visible=visible + inflight_due + delayed_due,
            in_flight=inflight - inflight_due,
            delayed=delayed - delayed_due,
        )

    async def next_due_ms(self, queue_name: str) -> int | None:
        server = self._servers[self.server_for(queue_name)]
        keys = QueueKeys(queue_name)

        async def read() -> list[list[tuple[str, float]]]:
            pipeline = server.client.pipeline(transaction=True)
            pipeline.zrange(keys.inflight, 0, 0, withscores=True)
            pipeline.zrange(keys.delayed, 0, 0, withscores=True)
            return list(await pipeline.execute())

        heads = await self._call(server, read)
        scores = [int(score) for head in heads for _member, score in head]
        return min(scores) if scores else None

    async def purge(self, queue_name: str) -> None:
        await self._script(queue_name, "purge", [queue_name])

    async def drop(self, queue_name: str) -> None:
        await self._script(queue_name, "drop", [queue_name])

    # --- revisibility ---------------------------------------------------------------------

    async def release_due(self, now_ms: int, limit: int) -> list[str]:
        """Visits at most `limit` due queues per server and moves at most `limit` messages
        of each; what is left stays due in `cqs:due` for the next call."""
        per_server = await asyncio.gather(
            *(self._release_due_on(server, now_ms, limit) for server in self._servers.values())
        )
        return [queue_name for released in per_server for queue_name in released]

    async def _release_due_on(self, server: _Server, now_ms: int, limit: int) -> list[str]:
        released: list[str] = []
        try:
            due_queues = cast(
                "list[str]",
                await self._call(
                    server,
                    server.client.zrangebyscore,
                    DUE_KEY,
                    "-inf",
                    now_ms,
                    start=0,
                    num=limit,
                ),
            )
            for queue_name in due_queues:
                moved = await self._call(
                    server,
                    server.scripts.release_due,
                    keys=QueueKeys(queue_name).script_keys(),
                    args=[now_ms, limit, queue_name],
                )
                if moved:
                    released.append(queue_name)
        except StorageUnavailable:
            # the breaker logged the outage once; the sweep goes on with the other servers
            log.debug("skipping the revisibility sweep on %s: unreachable", server.url)
        return released

    async def close(self) -> None:
        for server in self._servers.values():
            await server.client.aclose()
