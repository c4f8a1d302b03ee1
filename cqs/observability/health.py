"""Liveness and readiness, as load balancers and orchestrators expect them.

Owns what `/health` and `/ready` answer: liveness is 200 while the process runs; readiness
is 200 when every Redis server and Cassandra answer, otherwise 503 with each backend's
status and the degraded mode the service is in (the cqs failure behaviour, see
docs/architecture.md "Failures and several processes"). Imports the standard library only;
the composition root hands in the checks (`RedisMessageCache.ping_servers`,
`CassandraSession.ping`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

DEFAULT_CHECK_TIMEOUT_SECONDS = 2.0

REDIS_DOWN_MODE = "serving from Cassandra"
CASSANDRA_DOWN_MODE = "serving cached queues from Redis; sends and uncached queues fail"
BOTH_DOWN_MODE = "unavailable"


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: dict[str, object]


def liveness(started_at: float, version: str) -> Answer:
    return Answer(200, {
        "status": "alive",
        "version": version,
        "pid": os.getpid(),
        "uptime_seconds": round(time.time() - started_at, 3),
    })


class ReadinessProbe:
    """Asks every backend at once, each within `timeout_seconds`."""

    def __init__(
        self,
        redis_servers: Callable[[], Awaitable[Mapping[str, bool]]],
        cassandra: Callable[[], Awaitable[object]],
        *,
        redis_labels: list[str],
        timeout_seconds: float = DEFAULT_CHECK_TIMEOUT_SECONDS,
    ) -> None:
        self._redis_servers = redis_servers
        self._cassandra = cassandra
        self._redis_labels = redis_labels
        self._timeout = timeout_seconds

    async def check(self) -> Answer:
        redis, cassandra_up = await asyncio.gather(self._check_redis(), self._check_cassandra())
        redis_up = all(redis.values())
        body: dict[str, object] = {
            "redis": {label: "ok" if up else "unreachable" for label, up in redis.items()},
            "cassandra": "ok" if cassandra_up else "unreachable",
        }
        if redis_up and cassandra_up:
            return Answer(200, {"status": "ready", **body})
        if cassandra_up:
            mode = REDIS_DOWN_MODE
        elif any(redis.values()):
            mode = CASSANDRA_DOWN_MODE
        else:
            mode = BOTH_DOWN_MODE
        status = "unavailable" if mode == BOTH_DOWN_MODE else "degraded"
        return Answer(503, {"status": status, "mode": mode, **body})

    async def _check_redis(self) -> Mapping[str, bool]:
        try:
            return await asyncio.wait_for(self._redis_servers(), self._timeout)
        except Exception:  # a hung or broken check: every server counts as unreachable
            return dict.fromkeys(self._redis_labels, False)

    async def _check_cassandra(self) -> bool:
        try:
            await asyncio.wait_for(self._cassandra(), self._timeout)
        except Exception:  # StorageUnavailable, a timeout, anything: not ready
            return False
        return True


def starting() -> Answer:
    """Readiness before storage is connected."""
    return Answer(503, {"status": "starting"})
