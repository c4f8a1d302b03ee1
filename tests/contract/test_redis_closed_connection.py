"""A Redis call whose connection was closed under it fails as a lost connection, not as an
unexpected error, on uvloop, the loop `cqs serve` runs on.

Seen in a Redis Cluster failover drill: a node killed while redis-py opened a connection
made uvloop raise RuntimeError ("the handler is closed") from the write of HELLO, and
DeleteMessage answered 500. Here the connection to a real Redis server is really closed
by its transport before the write; the event loop is uvloop itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvloop

from cqs.domain.errors import StorageBusy
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.servers import RedisServer, ServerLimits, closed_transport


async def write_on_a_closed_connection(server: RedisServer) -> Any:
    connection = server.client.connection_pool.make_connection()  # type: ignore[no-untyped-call]
    await connection.connect()
    connection._writer.transport.close()
    await asyncio.sleep(0.05)
    try:
        return await connection.send_command("PING")
    finally:
        await connection.disconnect()


def test_a_write_to_a_closed_connection_fails_as_a_busy_server_not_an_unexpected_error(
    redis_server: EmbeddedRedis,
) -> None:
    async def scenario() -> None:
        server = RedisServer(redis_server.url, ServerLimits())
        try:
            with pytest.raises(RuntimeError) as raw:  # what uvloop raises, untranslated
                await write_on_a_closed_connection(server)
            assert closed_transport(raw.value), raw.value
            # Through the server's call: the server still answers, so the call is refused
            # as busy (retryable, 503), and the breaker stays closed.
            with pytest.raises(StorageBusy):
                await server.call("ping", write_on_a_closed_connection, server)
            assert await server.call("ping", server.client.ping)
        finally:
            await server.client.aclose()
            await server.feed_client.aclose()

    uvloop.run(scenario())
