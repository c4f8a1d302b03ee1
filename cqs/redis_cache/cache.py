"""RedisMessageCache: the `MessageCache` port over one or more Redis servers.

Owns the mapping of queues to servers (a consistent-hash ring over the server URLs), the
calls into the Lua scripts and the decoding of their replies into model values. How a call
reaches its server, within the pool's limit, and what its failure means (`StorageBusy` or
`StorageUnavailable`) is `servers.py`'s. Imports model, errors and its own package; never
the service, aiohttp or cassandra.

Clocks: every method that takes `now_ms` uses it. `change_visibility` has no `now_ms` in
the port, so it reads the wall clock (`time.time()`), the same clock the service uses to
compute `visible_at_ms`. Leases (fill, sweep, listening) expire on the Redis server's clock.

Arrivals: each `arrivals()` iterator holds one pub/sub connection per server on the
server's arrivals channel; a lost connection is retried with a growing delay, and names
published meanwhile are missed (long polls must still re-check on their own timer).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from cqs.errors import StorageBusy, StorageError
from cqs.message_codec import decode_message, encode_message
from cqs.model import (
    Admission,
    CacheState,
    Deduplication,
    DeleteOutcome,
    Delivery,
    FifoAdmission,
    Message,
    MessageCounts,
    VisibilityOutcome,
)
from cqs.redis_cache.keys import (
    ARRIVALS_CHANNEL,
    DUE_KEY,
    STATE_FILLING_PREFIX,
    STATE_READY,
    STORE_DELETE_QUEUES_KEY,
    SWEEPER_KEY,
    QueueKeys,
    filling_state,
)
from cqs.redis_cache.ring import HashRing
from cqs.redis_cache.scripts import SCRIPT_NAMES
from cqs.redis_cache.servers import (
    BackendObserver,
    PoolObserver,
    RedisServer,
    ServerLimits,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

TRIM_BATCH = 1000  # messages one trim_expired call drops at most (one short script run)
FORGET_BATCH = 1000  # ids per forget_store_deletes script run (Lua unpack has a stack limit)
# FIFO: AWS keeps deduplication ids and ReceiveRequestAttemptIds for five minutes.
DEDUPLICATION_INTERVAL_MS = 300_000
RECEIVE_ATTEMPT_MS = 300_000
# How long a FIFO send's admission holds its deduplication key before the send is stored:
# longer than any store write takes, so a retry never slips past a send still storing.
ADMISSION_LEASE_MS = 60_000
# A queue's deduplication and sequence keys lapse as a whole after this long without sends.
FIFO_KEYS_TTL_MS = 2 * DEDUPLICATION_INTERVAL_MS
RESUBSCRIBE_FIRST_DELAY_S = 0.05
RESUBSCRIBE_MAX_DELAY_S = 1.0


# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def _sent_ms_of(message_id: str | None) -> int | None:
    """When a message was sent, read from its id (a version-1 UUID, as the store needs)."""
    if not message_id:
        return None
    try:
        parsed = uuid.UUID(message_id)
    except ValueError:
        return None
    return (parsed.time - _UUID_EPOCH_OFFSET) // 10_000 if parsed.version == 1 else None


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


def _fifo_values(message: Message) -> list[str | int]:
    """Group id and sequence number ('' and '' for a standard queue's message)."""
    if message.group_id is None:
        return ["", ""]
    return [message.group_id, message.sequence_number or 0]


def _encode_batch(
    messages: Sequence[Message], dedup_fields: Mapping[str, str]
) -> list[str | int]:
    """Seven ARGV values per message, as add.lua reads them."""
    values: list[str | int] = []
    for message in messages:
        values += [
            message.message_id,
            message.sent_timestamp_ms,
            message.visible_at_ms,
            encode_message(message),
            *_fifo_values(message),
            dedup_fields.get(message.message_id, ""),
        ]
    return values


def _encode_load_batch(
    messages: Sequence[Message], hidden_until: Mapping[str, int]
) -> list[str | int]:
    """Seven ARGV values per message, as load.lua reads them (0 = not hidden)."""
    values: list[str | int] = []
    for message in messages:
        values += [
            message.message_id,
            message.sent_timestamp_ms,
            message.visible_at_ms,
            hidden_until.get(message.message_id, 0),
            encode_message(message),
            *_fifo_values(message),
        ]
    return values


def dedup_field(queue_id: str, key: str) -> str:
    """The dedup hash field of a deduplication key: scoped by the queue incarnation, so a
    re-created queue of the same name starts with no deduplication entries."""
    return f"{queue_id}/{key}"


def _decode_receive(reply: Any) -> tuple[list[Delivery], list[Message]] | None:
    """The reply of receive.lua and receive_fifo.lua: None (cache not ready), or the
    deliveries (six values each) and the dead letters (id, payload each)."""
    if reply is None:
        return None
    delivered, dead = reply
    deliveries = [
        Delivery(
            message=decode_message(delivered[index + 1]),
            receive_count=int(delivered[index + 2]),
            first_receive_timestamp_ms=int(delivered[index + 3]),
            receipt_nonce=str(delivered[index + 4]),
            reloaded=bool(int(delivered[index + 5])),
        )
        for index in range(0, len(delivered), 6)
    ]
    return deliveries, [decode_message(payload) for payload in dead[1::2]]


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


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


class RedisMessageCache:
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
    ) -> None:
        self._ring = HashRing(urls)
        self._feeds: set[_ArrivalFeed] = set()
        limits = ServerLimits(
            socket_timeout, connect_timeout, down_seconds, max_connections, pool_wait_seconds
        )
        self._servers: dict[str, RedisServer] = {
            url: RedisServer(url, limits, observe=observe, observe_pool=observe_pool)
            for url in urls
        }
        # id of a registered script -> its name (the operation label of its calls)
        self._operation_names: dict[int, str] = {
            id(getattr(server.scripts, name)): name
            for server in self._servers.values()
            for name in SCRIPT_NAMES
        }

    def server_for(self, queue_name: str) -> str:
        """The URL of the Redis server holding `queue_name`."""
        return self._ring.node_for(queue_name)

    # --- plumbing -------------------------------------------------------------------------

    async def _call(
        self,
        server: RedisServer,
        operation: Callable[P, Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run one Redis operation on `server` (its limits and failure translation)."""
        return await server.call(self._operation_name(operation), operation, *args, **kwargs)

    def _operation_name(self, operation: object) -> str:
        """A script's name, a command's name, or the method a local helper serves."""
        name = self._operation_names.get(id(operation))
        if name is None:
            qualname = getattr(operation, "__qualname__", "call")
            name = qualname.split(".<locals>")[0].rsplit(".", 1)[-1].lstrip("_")
        return name

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

    async def load(
        self,
        queue_name: str,
        owner: str,
        messages: Sequence[Message],
        now_ms: int,
        hidden_until: Mapping[str, int],
    ) -> bool:
        """Runs the script even for no messages, so the reply still tells whether `owner`
        holds the fill lease."""
        reply = await self._script(
            queue_name,
            "load",
            [now_ms, queue_name, filling_state(owner), *_encode_load_batch(messages, hidden_until)],
        )
        return int(reply) >= 0

    async def finish_fill(
        self,
        queue_name: str,
        owner: str,
        now_ms: int | None = None,
        hidden_until: Mapping[str, int] | None = None,
    ) -> bool:
        args: list[str | int] = [
            filling_state(owner), _wall_clock_ms() if now_ms is None else now_ms, queue_name
        ]
        for message_id, until in (hidden_until or {}).items():
            args.extend((message_id, until))
        reply = await self._script(queue_name, "finish_fill", args)
        return bool(reply)

    # --- messages -------------------------------------------------------------------------

    async def add(
        self,
        queue_name: str,
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
            queue_name,
            "add",
            [now_ms, queue_name, ARRIVALS_CHANNEL, DEDUPLICATION_INTERVAL_MS,
             *_encode_batch(messages, fields)],
        )
        return bool(reply)

    # --- FIFO -------------------------------------------------------------------------------

    async def admit(
        self, queue_name: str, queue_id: str, candidates: Sequence[tuple[str, str]], now_ms: int
    ) -> FifoAdmission:
        """Look up (deduplication key, would-be message id) pairs and number the new ones;
        an empty key numbers its message without deduplicating it."""
        args: list[str | int] = [now_ms, ADMISSION_LEASE_MS, FIFO_KEYS_TTL_MS]
        for key, message_id in candidates:
            args += [dedup_field(queue_id, key) if key else "", message_id]  # "": number only
        reply = await self._script(queue_name, "admit", args)
        outcomes = [
            Admission(str(outcome), str(message_id), int(sequence))
            for outcome, message_id, sequence in zip(
                reply[1::3], reply[2::3], reply[3::3], strict=True
            )
        ]
        return FifoAdmission(cache_ready=bool(int(reply[0])), outcomes=outcomes)

    async def abandon(
        self, queue_name: str, queue_id: str, admitted: Sequence[tuple[str, str]]
    ) -> None:
        """Release the admissions (deduplication key, message id) of a send that failed."""
        args: list[str | int] = []
        for key, message_id in admitted:
            args += [dedup_field(queue_id, key), message_id]
        if args:
            await self._script(queue_name, "abandon", args)

    async def load_deduplications(
        self, queue_name: str, queue_id: str, records: Sequence[Deduplication], now_ms: int
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
            added += int(await self._script(queue_name, "load_deduplications", [*args[:2], *chunk]))
        return added

    async def receive_fifo(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int,
        attempt_id: str | None,
    ) -> tuple[list[Delivery], list[Message]] | None:
        count = max(0, min(max_count, len(nonces)))
        reply = await self._script(
            queue_name,
            "receive_fifo",
            [
                now_ms, visibility_timeout_ms, retention_ms, count, queue_name, ARRIVALS_CHANNEL,
                max(0, max_receive_count), attempt_id or "", RECEIVE_ATTEMPT_MS,
                *nonces[:count],
            ],
        )
        return _decode_receive(reply)

    async def listen(self, queue_name: str, ttl_ms: int) -> None:
        server = self._servers[self.server_for(queue_name)]
        key = QueueKeys(queue_name).listening
        await self._call(server, server.client.set, key, "1", px=max(1, ttl_ms))

    async def arrivals(self) -> AsyncIterator[str]:
        feed = _ArrivalFeed()
        feed.tasks = [
            asyncio.create_task(
                self._follow_arrivals(server, feed.names), name=f"cqs-arrivals {server.url}"
            )
            for server in self._servers.values()
        ]
        self._feeds.add(feed)
        try:
            while (queue_name := await feed.names.get()) is not None:
                yield queue_name
        finally:
            self._feeds.discard(feed)
            await feed.stop()

    async def _follow_arrivals(self, server: RedisServer, names: asyncio.Queue[str | None]) -> None:
        """Subscribe to `server`'s arrivals channel and feed `names` until cancelled."""
        delay = RESUBSCRIBE_FIRST_DELAY_S
        in_outage = False
        while True:
            pubsub = server.feed_client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(ARRIVALS_CHANNEL)
                if in_outage:
                    log.warning("arrivals from Redis server %s are heard again", server.url)
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
                        server.url,
                        exc,
                    )
                    in_outage = True
            finally:
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESUBSCRIBE_MAX_DELAY_S)

    async def trim_expired(self, queue_name: str, now_ms: int, retention_ms: int) -> int:
        """Drops at most TRIM_BATCH messages per call; call again while it returns that many."""
        reply = await self._script(queue_name, "trim_expired", [now_ms, retention_ms, TRIM_BATCH])
        return int(reply)

    # --- deferred store deletes -----------------------------------------------------------

    async def defer_store_delete(self, queue_name: str, message_id: str) -> None:
        await self._script(queue_name, "defer_store_delete", [queue_name, message_id])

    async def deferred_store_deletes(self, limit: int) -> dict[str, list[str]]:
        """Not atomic: ids deferred or forgotten meanwhile may or may not be included.

        Servers and queues are visited in random order, so a queue whose deletes keep
        failing does not starve the others.
        """
        found: dict[str, list[str]] = {}
        servers = list(self._servers.values())
        random.shuffle(servers)
        for server in servers:
            remaining = limit - sum(len(ids) for ids in found.values())
            if remaining <= 0:
                break
            try:
                found.update(await self._call(server, self._read_store_deletes, server, remaining))
            except StorageError:
                log.debug("skipping deferred store deletes on %s: unreachable", server.url)
        return found

    @staticmethod
    async def _read_store_deletes(server: RedisServer, limit: int) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        queue_names = list(cast("set[str]", await server.client.smembers(STORE_DELETE_QUEUES_KEY)))
        random.shuffle(queue_names)
        for queue_name in queue_names:
            if limit <= 0:
                break
            key = QueueKeys(queue_name).store_deletes
            ids = cast("list[str]", await server.client.srandmember(key, limit))
            if ids:
                found[queue_name] = ids
                limit -= len(ids)
        return found

    async def forget_store_deletes(self, queue_name: str, message_ids: Sequence[str]) -> None:
        for start in range(0, max(1, len(message_ids)), FORGET_BATCH):
            batch = message_ids[start : start + FORGET_BATCH]
            await self._script(queue_name, "forget_store_deletes", [queue_name, *batch])

    async def receive(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
    ) -> list[Delivery] | None:
        outcome = await self.receive_redriving(
            queue_name, max_count, visibility_timeout_ms, now_ms, retention_ms, nonces, 0
        )
        return None if outcome is None else outcome[0]

    async def receive_redriving(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int,
    ) -> tuple[list[Delivery], list[Message]] | None:
        count = max(0, min(max_count, len(nonces)))
        reply = await self._script(
            queue_name,
            "receive",
            [
                now_ms,
                visibility_timeout_ms,
                retention_ms,
                count,
                queue_name,
                ARRIVALS_CHANNEL,
                max(0, max_receive_count),
                *nonces[:count],
            ],
        )
        return _decode_receive(reply)

    async def delete(self, queue_name: str, message_id: str, receipt_nonce: str) -> DeleteOutcome:
        reply = await self._script(queue_name, "delete", [message_id, receipt_nonce])
        return DeleteOutcome(reply)

    async def change_visibility(
        self, queue_name: str, message_id: str, receipt_nonce: str, visible_at_ms: int
    ) -> VisibilityOutcome:
        reply = await self._script(
            queue_name,
            "change_visibility",
            [
                message_id,
                receipt_nonce,
                visible_at_ms,
                _wall_clock_ms(),
                queue_name,
                ARRIVALS_CHANNEL,
            ],
        )
        return VisibilityOutcome(reply)

    async def counts(self, queue_name: str, now_ms: int) -> MessageCounts:
        """Hidden messages already due count as visible: the next receive would see them."""
        server = self._servers[self.server_for(queue_name)]
        keys = QueueKeys(queue_name)

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

    # --- observability ---------------------------------------------------------------------

    async def queue_stats(self, queue_names: Sequence[str]) -> dict[str, QueueStats]:
        """Figures of many queues at once: one pipelined round trip per server (GET state,
        LLEN, ZCARD, ZCARD, LINDEX 0 per queue; the oldest visible message's send time is
        read from its id, so no payload is touched). Queues of an unreachable server come
        back UNAVAILABLE."""
        by_server: dict[str, list[str]] = {}
        for queue_name in queue_names:
            by_server.setdefault(self.server_for(queue_name), []).append(queue_name)
        found: dict[str, QueueStats] = {}
        for part in await asyncio.gather(
            *(self._queue_stats_on(self._servers[url], names) for url, names in by_server.items())
        ):
            found.update(part)
        return found

    async def _queue_stats_on(
        self, server: RedisServer, queue_names: Sequence[str]
    ) -> dict[str, QueueStats]:
        async def read() -> list[Any]:
            pipeline = server.client.pipeline(transaction=False)
            for queue_name in queue_names:
                keys = QueueKeys(queue_name)
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
            replies = await self._call(server, read) if queue_names else []
        except StorageError:
            return {name: QueueStats(CacheState.UNAVAILABLE) for name in queue_names}
        found: dict[str, QueueStats] = {}
        for index, queue_name in enumerate(queue_names):
            state, visible, in_flight, delayed, head = replies[index * 5 : index * 5 + 5]
            if isinstance(head, list):  # a FIFO queue's ZRANGE
                head = head[0] if head else None
            if state is None:
                cache_state = CacheState.ABSENT
            elif state == STATE_READY:
                cache_state = CacheState.READY
            else:
                cache_state = CacheState.FILLING
            found[queue_name] = QueueStats(
                cache_state, int(visible), int(in_flight), int(delayed), _sent_ms_of(head)
            )
        return found

    async def ping_servers(self) -> dict[str, bool]:
        """Whether each server answers PING, by server label (no password in it)."""

        async def ping(server: RedisServer) -> bool:
            try:
                await self._call(server, server.client.ping)
            except StorageBusy:  # this process is loaded; the server is up
                return True
            except StorageError:
                return False
            return True

        servers = list(self._servers.values())
        answers = await asyncio.gather(*(ping(server) for server in servers))
        return {server.label: up for server, up in zip(servers, answers, strict=True)}

    # --- revisibility ---------------------------------------------------------------------

    async def release_due(self, now_ms: int, limit: int, sweeper: str, lease_ms: int) -> list[str]:
        """Visits at most `limit` due queues per server and moves at most `limit` messages
        of each; what is left stays due in `cqs:due` for the next call.

        `lease_ms` should outlast the time between two calls of the same sweeper, or the
        lease lapses between sweeps and another process may take it over.
        """
        per_server = await asyncio.gather(
            *(
                self._release_due_on(server, now_ms, limit, sweeper, lease_ms)
                for server in self._servers.values()
            )
        )
        return [queue_name for released in per_server for queue_name in released]

    async def _release_due_on(
        self, server: RedisServer, now_ms: int, limit: int, sweeper: str, lease_ms: int
    ) -> list[str]:
        released: list[str] = []
        try:
            holds_lease = await self._call(
                server,
                server.scripts.sweep_lease,
                keys=[SWEEPER_KEY],
                args=[sweeper, max(1, lease_ms)],
            )
            if not holds_lease:
                return released  # another process sweeps this server
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
            if due_queues:
                moved = await self._call(server, self._release_due_queues, server, due_queues,
                                         now_ms, limit)
                released = [name for name, count in zip(due_queues, moved, strict=True) if count]
        except StorageError:
            # the breaker logged the outage once; the sweep goes on with the other servers
            log.debug("skipping the revisibility sweep on %s: unreachable", server.url)
        return released

    @staticmethod
    async def _release_due_queues(
        server: RedisServer, queue_names: Sequence[str], now_ms: int, limit: int
    ) -> list[int]:
        """One `release_due` script call per queue, all in one pipeline (one round trip)."""
        pipeline = server.client.pipeline(transaction=False)
        for queue_name in queue_names:
            await server.scripts.release_due(
                keys=QueueKeys(queue_name).script_keys(),
                args=[now_ms, limit, queue_name, ARRIVALS_CHANNEL],
                client=pipeline,
            )
        return [int(count) for count in await pipeline.execute()]

    async def close(self) -> None:
        """Ends every `arrivals()` iterator (closing its subscriptions), then the clients."""
        for feed in list(self._feeds):
            feed.names.put_nowait(None)
            await feed.stop()
        for server in self._servers.values():
            await server.close()

    # --- for operators (read only) ----------------------------------------------------------

    def server_of(self, queue_name: str) -> str:
        return self._servers[self.server_for(queue_name)].label

    async def describe_servers(self, now_ms: int) -> dict[str, dict[str, str]]:
        servers = list(self._servers.values())
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
            info, (due_queues, earliest, sweeper) = await self._call(server, read)
        except StorageError:
            return figures
        described: dict[str, str] = figures | {
            name: str(info[name])
            for name in (
                "redis_version", "uptime_in_seconds", "used_memory", "used_memory_human",
                "used_memory_peak_human", "maxmemory", "maxmemory_human", "connected_clients",
                "role",
            )
            if name in info
        }
        described["due_queues"] = str(int(due_queues))
        if earliest:
            described["earliest_due_ms"] = str(int(earliest[0][1]))
        if sweeper:
            described["sweeper"] = str(sweeper)
        return described

    async def message_states(
        self, queue_name: str, message_ids: Sequence[str], now_ms: int
    ) -> dict[str, tuple[str, int, int]]:
        server = self._servers[self.server_for(queue_name)]
        keys = QueueKeys(queue_name)

        async def read() -> list[Any]:
            pipeline = server.client.pipeline(transaction=True)
            for message_id in message_ids:
                pipeline.hget(keys.receipt, message_id)
                pipeline.zscore(keys.inflight, message_id)
                pipeline.zscore(keys.delayed, message_id)
            return list(await pipeline.execute())

        replies = await self._call(server, read) if message_ids else []
        states: dict[str, tuple[str, int, int]] = {}
        for index, message_id in enumerate(message_ids):
            receipt, hidden_until, delayed_until = replies[index * 3 : index * 3 + 3]
            if receipt is None:
                continue
            _sent, receive_count, first_receive_ms = str(receipt).split(":")[:3]
            if hidden_until is not None and float(hidden_until) > now_ms:
                where = "in flight"
            elif delayed_until is not None and float(delayed_until) > now_ms:
                where = "delayed"
            else:
                where = "visible"
            states[message_id] = (where, int(receive_count), int(first_receive_ms))
        return states
