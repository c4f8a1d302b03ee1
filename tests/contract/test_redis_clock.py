"""The first Redis server's clock as the API processes read it (`clock_offset`), on a real
redis-server on this machine: the offset is the difference of two clocks on one host, so
about zero, and None when the server does not answer."""

from __future__ import annotations

from cqs.embedded.ports import free_port
from cqs.redis_cache.cache import RedisMessageCache


async def test_the_offset_to_a_redis_on_this_host_is_about_zero(
    message_cache: RedisMessageCache,
) -> None:
    offset = await message_cache.clock_offset()
    assert offset is not None
    assert abs(offset) < 0.05


async def test_a_redis_that_does_not_answer_gives_no_offset() -> None:
    cache = RedisMessageCache(
        [f"redis://127.0.0.1:{free_port()}/0"], socket_timeout=0.5, connect_timeout=0.5
    )
    try:
        assert await cache.clock_offset() is None
    finally:
        await cache.close()
