"""Script calls of concurrent requests share one connection, and each keeps its own outcome.

Against a real redis-server: hundreds of concurrent calls each get their own reply over one
or two connections; a failing script fails only its caller; scripts the server forgot mid-
stream are loaded again; a caller that gives up leaves the connection in step; a server
killed mid-flight fails the unanswered callers with the storage error, and the calls after
its restart work.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from cqs.domain.errors import StorageBusy, StorageUnavailable
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.servers import RedisServer, ServerLimits
from tests.contract.test_message_cache import make_message, nonces, now_ms, ready_queue

pytestmark = pytest.mark.timeout(60)

ECHO = "return {KEYS[1], ARGV[1]}"
# fails its call when asked to, in both ways a script can fail
MAY_FAIL = """
if ARGV[1] == 'reply' then return redis.error_reply('ERR asked to fail') end
if ARGV[1] == 'raise' then error('asked to raise') end
return ARGV[1]
"""
# spins for ARGV[1] microseconds, so calls are still unanswered when something happens
SPIN = """
local started = redis.call('TIME')
while true do
  local now = redis.call('TIME')
  if (now[1] - started[1]) * 1000000 + (now[2] - started[2]) > tonumber(ARGV[1]) then
    return ARGV[2]
  end
end
"""


@pytest.fixture
async def server(redis_server: EmbeddedRedis) -> AsyncIterator[RedisServer]:
    server = RedisServer(redis_server.url, ServerLimits())
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def raw(redis_server: EmbeddedRedis) -> AsyncIterator[Redis]:
    client: Redis = Redis.from_url(redis_server.url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


async def run(server: RedisServer, source: Any, keys: list[str], args: list[str | int]) -> Any:
    return await server.call("test", server.eval_script, source, keys, args)


async def cqs_connections(raw: Redis) -> int:
    return sum(1 for client in await raw.client_list() if client["name"] == "cqs")


async def scripts_sent_whole(raw: Redis) -> int:
    """How many calls sent their script's text (EVAL), as one that met NOSCRIPT does."""
    stats = await raw.info("commandstats")
    return int(stats.get("cmdstat_eval", {}).get("calls", 0))


async def test_hundreds_of_concurrent_calls_each_get_their_own_reply_over_one_connection(
    server: RedisServer, raw: Redis
) -> None:
    echo = server.client.register_script(ECHO)
    calls = [run(server, echo, [f"key-{n}"], [f"value-{n}"]) for n in range(500)]
    replies = await asyncio.gather(*calls)
    assert replies == [[f"key-{n}", f"value-{n}"] for n in range(500)]
    # 500 calls at once, 64 slots: without pipelining they would open 64 connections
    assert await cqs_connections(raw) == 1


async def test_concurrent_queue_operations_each_see_their_own_queue(redis_server: EmbeddedRedis) -> None:
    cache = RedisMessageCache([redis_server.url])
    try:
        queues = await asyncio.gather(*(ready_queue(cache) for _ in range(200)))
        now = now_ms()
        await asyncio.gather(*(
            cache.add(queue, [make_message(f"body of {queue.name}")], now) for queue in queues
        ))
        outcomes = await asyncio.gather(*(
            cache.receive(queue, 10, 30_000, now, 3_600_000, nonces(10)) for queue in queues
        ))
        for queue, outcome in zip(queues, outcomes, strict=True):
            assert outcome is not None
            assert [d.message.body for d in outcome.deliveries] == [f"body of {queue.name}"]
    finally:
        await cache.close()


async def test_a_failing_script_among_many_fails_only_its_own_caller(server: RedisServer) -> None:
    may_fail = server.client.register_script(MAY_FAIL)
    asks = [str(n) for n in range(300)]
    asks[17], asks[150] = "reply", "raise"
    outcomes = await asyncio.gather(
        *(run(server, may_fail, [], [ask]) for ask in asks), return_exceptions=True
    )
    assert isinstance(outcomes[17], ResponseError) and "asked to fail" in str(outcomes[17])
    assert isinstance(outcomes[150], ResponseError) and "asked to raise" in str(outcomes[150])
    assert [o for n, o in enumerate(outcomes) if n not in (17, 150)] == [
        ask for n, ask in enumerate(asks) if n not in (17, 150)
    ]
    assert not server.breaker.is_down


async def test_scripts_flushed_mid_stream_are_loaded_again_and_every_call_succeeds(
    server: RedisServer, raw: Redis
) -> None:
    """Wall clock: random pauses spread the flushes among the calls (shape, not a wait)."""
    echo = server.client.register_script(ECHO)
    may_fail = server.client.register_script(MAY_FAIL)
    whole_before = await scripts_sent_whole(raw)

    async def flusher() -> None:
        for _ in range(5):
            await asyncio.sleep(random.uniform(0.005, 0.02))
            await raw.script_flush()
            await raw.script_load(MAY_FAIL)  # one script known, the other forgotten

    async def wave(wave_number: int) -> list[Any]:
        return await asyncio.gather(*(
            run(server, echo, [f"k{wave_number}-{n}"], [str(n)]) if n % 2
            else run(server, may_fail, [], [f"{wave_number}-{n}"])
            for n in range(100)
        ))

    flushing = asyncio.ensure_future(flusher())
    waves = []
    while not flushing.done():
        waves.append(await wave(len(waves)))
    await flushing
    waves.append(await wave(len(waves)))

    for number, replies in enumerate(waves):
        assert replies == [
            [f"k{number}-{n}", str(n)] if n % 2 else f"{number}-{n}" for n in range(100)
        ]
    assert await scripts_sent_whole(raw) > whole_before, "no call met NOSCRIPT"


async def test_callers_that_give_up_leave_the_connection_in_step(server: RedisServer) -> None:
    spin = server.client.register_script(SPIN)
    echo = server.client.register_script(ECHO)

    async def impatient(n: int) -> Any:
        try:
            return await asyncio.wait_for(run(server, spin, [], [2000, f"spun {n}"]), 0.02)
        except TimeoutError:
            return "gave up"

    outcomes = await asyncio.gather(*(impatient(n) for n in range(100)))
    assert "gave up" in outcomes
    assert {o for o in outcomes if o != "gave up"} <= {f"spun {n}" for n in range(100)}
    # the replies of the callers that gave up were read and dropped, not handed to others
    replies = await asyncio.gather(*(run(server, echo, [f"k{n}"], [str(n)]) for n in range(200)))
    assert replies == [[f"k{n}", str(n)] for n in range(200)]
    assert server.pool_figures().in_use == 0


async def test_a_redis_killed_mid_flight_fails_the_unanswered_callers_and_comes_back(
    lone_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    server = RedisServer(lone_redis.url, ServerLimits(down_seconds=0.0))
    restarted: EmbeddedRedis | None = None
    try:
        spin = server.client.register_script(SPIN)
        # 300 calls of 3 ms each: about 0.9 s of work, killed once the first are answered
        calls = [
            asyncio.ensure_future(run(server, spin, [], [3000, f"spun {n}"])) for n in range(300)
        ]
        while not any(call.done() for call in calls):
            await asyncio.sleep(0.005)
        lone_redis.kill()
        outcomes = await asyncio.gather(*calls, return_exceptions=True)

        answered = [o for o in outcomes if isinstance(o, str)]
        failed = [o for o in outcomes if not isinstance(o, str)]
        assert answered and failed
        assert all(o == f"spun {n}" for n, o in enumerate(outcomes) if isinstance(o, str))
        assert all(isinstance(o, StorageUnavailable) for o in failed), {type(o) for o in failed}

        restarted = EmbeddedRedis(tmp_path / "redis-again", port=lone_redis.port)
        restarted.start()
        echo = server.client.register_script(ECHO)
        deadline = time.monotonic() + 10
        while True:  # the first calls after the restart may still meet the breaker
            try:
                await run(server, echo, ["k"], ["v"])
                break
            except (StorageUnavailable, StorageBusy):
                assert time.monotonic() < deadline, "the restarted server never answered"
                await asyncio.sleep(0.05)
        # the restarted server knows no script: both are loaded again
        replies = await asyncio.gather(
            *(run(server, echo, [f"k{n}"], [str(n)]) for n in range(100)),
            *(run(server, spin, [], [10, f"spun {n}"]) for n in range(100)),
        )
        assert replies == [[f"k{n}", str(n)] for n in range(100)] + [
            f"spun {n}" for n in range(100)
        ]
    finally:
        await server.close()
        if restarted is not None:
            restarted.stop()


async def test_a_flush_is_bounded_and_the_rest_follow_in_the_next_ones(server: RedisServer) -> None:
    echo = server.client.register_script(ECHO)
    big = "x" * (200 * 1024)
    flushes_before = server.script_flushes
    replies = await asyncio.gather(
        *(run(server, echo, [f"k{n}"], [big if n < 8 else str(n)]) for n in range(64))
    )
    assert replies == [[f"k{n}", big if n < 8 else str(n)] for n in range(64)]
    # 8 calls of 200 KiB (512 KiB a flush) and 56 small ones (64 calls a flush): several
    assert server.script_flushes - flushes_before >= 3



async def test_a_redis_restarted_while_no_call_ran_answers_the_next_call_at_once(
    lone_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """Wall clock: the client sees the close only while idle; nothing signals that it has."""
    server = RedisServer(lone_redis.url, ServerLimits(down_seconds=60.0))
    restarted: EmbeddedRedis | None = None
    try:
        echo = server.client.register_script(ECHO)
        assert await run(server, echo, ["k"], ["before"]) == ["k", "before"]
        lone_redis.kill()
        await asyncio.sleep(0.1)  # idle: the loop sees the server close the connection
        restarted = EmbeddedRedis(tmp_path / "redis-again", port=lone_redis.port)
        restarted.start()
        # no caller pays for the stale connection (a failure would open the breaker for 60 s)
        assert await run(server, echo, ["k"], ["after"]) == ["k", "after"]
        assert not server.breaker.is_down
    finally:
        await server.close()
        if restarted is not None:
            restarted.stop()


async def test_a_frozen_redis_fails_every_queued_call_after_one_socket_timeout(
    lone_redis: EmbeddedRedis,
) -> None:
    """Five flushes' worth of calls to a server that stopped answering all fail together when
    the first flush times out, instead of one socket timeout per flush.
    Wall clock: the socket timeout is what is measured."""
    limits = ServerLimits(socket_timeout=1.0, down_seconds=0.0, max_connections=5 * 64)
    server = RedisServer(lone_redis.url, limits)
    try:
        echo = server.client.register_script(ECHO)
        assert await run(server, echo, ["k"], ["v"]) == ["k", "v"]  # connected, script loaded
        os.kill(lone_redis.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            outcomes = await asyncio.gather(
                *(run(server, echo, [f"k{n}"], [str(n)]) for n in range(5 * 64)),
                return_exceptions=True,
            )
            took = time.monotonic() - started
        finally:
            os.kill(lone_redis.pid, signal.SIGCONT)
        assert all(isinstance(o, StorageUnavailable) for o in outcomes), {type(o) for o in outcomes}
        # One socket timeout (1 s) for the flush, then each caller's probe of the server
        # (about 2 s more): about 3 s. A socket timeout per flush would add 4 s: about 7 s.
        assert took < 5.0, f"{took:.1f} s for the queued calls to fail"
        assert await run(server, echo, ["k"], ["again"]) == ["k", "again"]  # and it comes back
    finally:
        await server.close()
