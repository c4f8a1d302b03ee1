"""Per-queue statistics over a real Redis: `RedisMessageCache.queue_stats` reads many queues
in one pipelined round trip per server, and `QueueStatistics` reads at most once per TTL."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence

from redis.asyncio import Redis

from cqs.domain.model import CacheState, Message, QueueIdentity, QueueNamespace
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.observability.stats import QueueFigures, QueueStatistics
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.inspector import QueueStats
from cqs.redis_cache.servers import server_label
from cqs.service import new_message_id
from tests.fixtures.manual_clock import ManualClock

_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def message(delay_ms: int = 0) -> Message:
    message_id = new_message_id()
    sent_ms = (uuid.UUID(message_id).time - _UUID_EPOCH_OFFSET) // 10_000
    return Message(
        message_id=message_id, body="x", md5_of_body="", sent_timestamp_ms=sent_ms,
        visible_at_ms=sent_ms + delay_ms, sender_id="000000000000",
    )


HOME = QueueNamespace("000000000000", "us-east-1")


async def cached_queue(cache: RedisMessageCache, prefix: str) -> QueueIdentity:
    """A queue whose cache is READY (as a newly created queue's is)."""
    queue = HOME.queue(f"{prefix}-{uuid.uuid4().hex[:10]}")
    assert await cache.begin_fill(queue, "test", 30_000)
    assert await cache.finish_fill(queue, "test")
    return queue


async def commands_processed(client: Redis) -> int:
    return int((await client.info("stats"))["total_commands_processed"])


async def test_queue_stats_reports_each_queues_counts_state_and_oldest_message(
    lone_cache: RedisMessageCache,
) -> None:
    busy = await cached_queue(lone_cache, "busy")
    oldest, newer, delayed, hidden = message(), message(), message(60_000), message()
    now_ms = hidden.sent_timestamp_ms
    await lone_cache.add(busy, [hidden], now_ms)
    assert await lone_cache.receive(busy, 1, 60_000, now_ms, 10**9, ["n"])
    await lone_cache.add(busy, [oldest, newer, delayed], now_ms)
    empty = await cached_queue(lone_cache, "empty")
    never = HOME.queue(f"never-{uuid.uuid4().hex[:10]}")

    stats = await lone_cache.queue_stats([busy, empty, never])

    assert stats[busy] == QueueStats(
        CacheState.READY, visible=2, in_flight=1, delayed=1,
        oldest_visible_sent_ms=oldest.sent_timestamp_ms,
    )
    assert stats[empty] == QueueStats(CacheState.READY)
    assert stats[never] == QueueStats(CacheState.ABSENT)


async def test_queue_stats_reads_every_queue_of_a_server_in_one_pipelined_round_trip(
    lone_redis: EmbeddedRedis,
) -> None:
    calls: list[tuple[str, str, str, bool]] = []
    cache = RedisMessageCache(
        [lone_redis.url],
        observe=lambda backend, server, operation, _s, ok: calls.append(
            (backend, server, operation, ok)
        ),
    )
    counter = Redis.from_url(lone_redis.url)
    try:
        names = [await cached_queue(cache, "many") for _ in range(200)]
        for name in names[::10]:
            await cache.add(name, [message()], int(time.time() * 1000))
        # Scripts run on a connection of their own: open the command pool's first connection
        # (its handshake is two CLIENT SETINFO commands) before counting.
        await cache.queue_stats(names[:1])
        calls.clear()
        before = await commands_processed(counter)

        stats = await cache.queue_stats(names)

        after = await commands_processed(counter)
        assert len(stats) == 200
        assert sum(s.visible for s in stats.values()) == 20
        assert calls == [("redis", server_label(lone_redis.url), "queue_stats_on", True)]
        assert after - before == 5 * 200 + 1  # five reads per queue, plus the first INFO
    finally:
        await counter.aclose()
        await cache.close()


async def test_queues_of_an_unreachable_server_are_reported_unavailable(
    lone_redis: EmbeddedRedis, lone_cache: RedisMessageCache
) -> None:
    name = await cached_queue(lone_cache, "gone")
    lone_redis.stop()
    stats = await lone_cache.queue_stats([name])
    assert stats[name] == QueueStats(CacheState.UNAVAILABLE)
    assert await lone_cache.ping_servers() == {server_label(lone_redis.url): False}


class CountingSource:
    """The real cache, counting the reads that reach it."""

    def __init__(self, cache: RedisMessageCache) -> None:
        self.cache = cache
        self.reads: list[Sequence[QueueIdentity]] = []

    async def queue_stats(
        self, queues: Sequence[QueueIdentity]
    ) -> Mapping[QueueIdentity, QueueFigures]:
        self.reads.append(list(queues))
        return await self.cache.queue_stats(queues)


class ListedNames:
    """The catalog's listing of one namespace, counting the listings (the catalog itself is
    covered by its contract tests; here only how often statistics list matters)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.listings = 0

    async def list_names(self, account_id: str, region: str) -> list[str]:
        assert (account_id, region) == HOME
        self.listings += 1
        return self.names


async def test_a_burst_of_snapshots_within_the_ttl_reads_redis_once(
    lone_cache: RedisMessageCache,
) -> None:
    queue = await cached_queue(lone_cache, "burst")
    source = CountingSource(lone_cache)
    clock = ManualClock()
    catalog = ListedNames([queue.name])

    statistics = QueueStatistics(
        catalog, source, HOME, ttl_seconds=2.0, names_ttl_seconds=10.0, clock=clock
    )
    first = await statistics.snapshot()
    clock.now += 1.9
    assert await statistics.snapshot() is first
    assert len(source.reads) == 1

    await lone_cache.add(queue, [message()], int(time.time() * 1000))
    clock.now += 0.2
    second = await statistics.snapshot()
    assert second is not first
    assert second.queues[queue.name].visible == 1
    assert len(source.reads) == 2
    assert catalog.listings == 1  # names are listed again only after their own TTL
    clock.now += 10
    await statistics.snapshot()
    assert catalog.listings == 2
