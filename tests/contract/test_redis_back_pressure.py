"""A full connection pool or a slow answer is back-pressure, never an outage (issue 13).

Against a real redis-server: calls beyond the pool's size wait for a slot; a call that waits
past the pool wait, or that times out while the server still answers a probe, fails with
`StorageBusy` and leaves the server's breaker closed, so the service never switches the
queue to Return-From-Cassandra for it. Only a server that does not answer the probe opens
the breaker (`StorageUnavailable`).
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from redis.asyncio import Redis

from cqs.domain.errors import StorageBusy, StorageUnavailable
from cqs.domain.model import QueueIdentity
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.servers import RedisServer, ServerLimits

# Keeps Redis busy for about half a second (one script blocks the server while it runs).
BUSY_SCRIPT = """
local started = redis.call('TIME')
while true do
  local now = redis.call('TIME')
  if (now[1] - started[1]) * 1000000 + (now[2] - started[2]) > 500000 then
    return 1
  end
end
"""


async def test_a_thousand_concurrent_calls_on_a_pool_of_four_all_succeed(
    redis_server: EmbeddedRedis,
) -> None:
    waits: list[tuple[float, bool]] = []
    cache = RedisMessageCache(
        [redis_server.url], max_connections=4, pool_wait_seconds=30.0,
        observe_pool=lambda backend, server, seconds, admitted: waits.append((seconds, admitted)),
    )
    try:
        states = await asyncio.gather(*(cache.state(QueueIdentity("000000000000", "us-east-1", f"q-{n}")) for n in range(1000)))
        assert len(states) == 1000
        assert waits, "calls beyond the pool's four slots should have waited"
        assert all(admitted for _, admitted in waits)
        [described] = (await cache.describe_servers(0)).values()
        assert described["pool_size"] == "4"
        assert described["pool_in_use"] == "0"  # read before the describing call
    finally:
        await cache.close()


async def blpop_running(url: str) -> None:
    """Wait (at most 1 s) until the server runs a BLPOP for some client."""
    raw = Redis.from_url(url)
    try:
        for _ in range(100):
            clients = await raw.client_list()
            if any(client.get("cmd") == "blpop" for client in clients):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the BLPOP never reached the server")
    finally:
        await raw.aclose()


async def test_a_call_that_waits_past_the_pool_wait_is_busy_and_the_server_stays_up(
    redis_server: EmbeddedRedis,
) -> None:
    server = RedisServer(
        redis_server.url, ServerLimits(socket_timeout=5.0, max_connections=1,
                                       pool_wait_seconds=0.2),
    )
    try:
        holder = asyncio.ensure_future(
            server.call("blpop", server.client.blpop, ["cqs-test-never-pushed"], 1)
        )
        await blpop_running(redis_server.url)  # it holds the only slot for a second
        with pytest.raises(StorageBusy):
            await server.call("ping", server.client.ping)
        assert not server.breaker.is_down
        assert await holder is None
        assert await server.call("ping", server.client.ping)
    finally:
        await server.close()


async def test_a_slow_answer_from_a_live_server_is_busy_not_an_outage(
    redis_server: EmbeddedRedis,
) -> None:
    server = RedisServer(redis_server.url, ServerLimits(socket_timeout=0.3))
    try:
        with pytest.raises(StorageBusy):
            await server.call("eval", server.client.eval, BUSY_SCRIPT, 0)
        assert not server.breaker.is_down
        assert await server.call("ping", server.client.ping)
    finally:
        await server.close()


async def test_a_frozen_server_is_an_outage_once_the_probe_gets_no_answer(
    lone_redis: EmbeddedRedis,
) -> None:
    server = RedisServer(lone_redis.url, ServerLimits(socket_timeout=0.3, down_seconds=60.0))
    pid = lone_redis.pid
    try:
        assert await server.call("ping", server.client.ping)
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(StorageUnavailable):
                await server.call("ping", server.client.ping)
            assert server.breaker.is_down
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        await server.close()
