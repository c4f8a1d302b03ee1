"""The contract suites' own redis-server.

The shared session `redis_server` also backs the `cqs serve` processes other directories
start (tests/clients, tests/wire), which live until the session ends: their revisibility
workers sweep every due queue of their Redis, and so would take part in the sweeps these
suites assert on. Here the port suites get a server no cqs process uses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cqs.embedded.redis_server import EmbeddedRedis
from tests.fixtures.redis_server import running_redis


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    yield from running_redis(tmp_path_factory.mktemp("contract-redis"))
