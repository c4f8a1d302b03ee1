"""Which Redis failures left the command unsent: those a call may run once more.

redis-py's own wording is what `command_never_sent` reads, so the connect failure here is a real
one (a port nothing listens on), not a constructed message.
"""

from __future__ import annotations

import socket

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from cqs.redis_cache.servers import command_never_sent


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_a_connection_that_was_never_made_left_the_command_unsent() -> None:
    client = Redis(host="127.0.0.1", port=closed_port(), socket_connect_timeout=1.0, retry=None)
    try:
        with pytest.raises(RedisConnectionError) as refused:
            await client.ping()
    finally:
        await client.aclose()
    assert command_never_sent(refused.value)
    assert command_never_sent(RedisTimeoutError("Timeout connecting to server"))


def test_a_read_that_timed_out_may_have_run_on_the_server() -> None:
    assert not command_never_sent(RedisTimeoutError("Timeout reading from 127.0.0.1:6379"))
    assert not command_never_sent(RedisConnectionError("Connection closed by server."))
    assert not command_never_sent(TimeoutError())
