"""What a Redis outage means for the service, told apart on a real redis-server.

A server that stops answering (SIGSTOP here; a cut link or a long pause looks the same)
may still hold its data and serve other processes: its calls fail as `CacheUnreachable`,
and nothing may be handed out from Cassandra in its place. A standalone server that
refuses connections is gone, and its data with it (cqs runs Redis without persistence):
its calls fail as plain `StorageUnavailable`, and the queue is served from Cassandra. The
breaker, while open, repeats the kind of the outage that opened it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from cqs.domain.errors import CacheUnreachable, StorageUnavailable
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.servers import RedisServer, ServerLimits

LIMITS = ServerLimits(socket_timeout=0.5, connect_timeout=0.5, down_seconds=30.0)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()
    yield server
    if server.is_running:
        os.kill(server.pid, signal.SIGCONT)
        server.stop()


async def test_a_server_that_stops_answering_is_unreachable_not_gone(
    own_redis: EmbeddedRedis,
) -> None:
    server = RedisServer(own_redis.url, LIMITS)
    try:
        assert await server.call("ping", server.client.ping)
        os.kill(own_redis.pid, signal.SIGSTOP)
        with pytest.raises(CacheUnreachable):
            await server.call("ping", server.client.ping)
        with pytest.raises(CacheUnreachable):  # the open breaker says the same
            await server.call("ping", server.client.ping)
    finally:
        os.kill(own_redis.pid, signal.SIGCONT)  # before close: it waits for answers
        await server.close()


async def test_a_standalone_server_that_refuses_connections_is_gone_with_its_data(
    own_redis: EmbeddedRedis,
) -> None:
    server = RedisServer(own_redis.url, LIMITS)
    try:
        assert await server.call("ping", server.client.ping)
        own_redis.stop()
        with pytest.raises(StorageUnavailable) as failed:
            await server.call("ping", server.client.ping)
        assert not isinstance(failed.value, CacheUnreachable)
        with pytest.raises(StorageUnavailable) as again:  # the open breaker
            await server.call("ping", server.client.ping)
        assert not isinstance(again.value, CacheUnreachable)
    finally:
        await server.close()
