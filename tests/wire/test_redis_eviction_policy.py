"""`cqs serve` and a Redis whose maxmemory-policy may evict keys: refused, unless allowed.

An evicting policy drops cached payloads, in-flight state and FIFO deduplication entries
silently; an API process checks each server's policy before it serves. Real processes: a
redis-server of the test's own (its policy changed with CONFIG SET), the shared Cassandra
node, `python -m cqs serve`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from redis import Redis

from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.embedded.redis_server import EmbeddedRedis
from tests.fixtures.cqs_server import StartServer


def evicting(redis: EmbeddedRedis) -> EmbeddedRedis:
    with Redis(host="127.0.0.1", port=redis.port) as client:
        client.config_set("maxmemory-policy", "allkeys-lru")
    return redis


def test_serve_refuses_a_redis_that_may_evict_keys(
    lone_redis: EmbeddedRedis, cassandra_node: EmbeddedCassandra, tmp_path: Path
) -> None:
    redis = evicting(lone_redis)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    finished = subprocess.run(
        [
            sys.executable, "-m", "cqs", "serve", "--port", "0",
            "--redis-urls", redis.url, "--cassandra-hosts", cassandra_node.contact_point,
            "--cassandra-keyspace", "ev_" + uuid.uuid4().hex[:12],
            "--data-dir", str(tmp_path / "data"), "--receipt-secret", "test-secret",
        ],
        capture_output=True, text=True, timeout=90, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert finished.returncode == 1, finished.stderr[-2000:]
    assert f"127.0.0.1:{redis.port}/0 has maxmemory-policy allkeys-lru" in finished.stderr
    assert "noeviction" in finished.stderr
    assert "Traceback" not in finished.stderr


def test_serve_warns_about_an_evicting_redis_when_allowed(
    lone_redis: EmbeddedRedis, start_cqs_server: StartServer
) -> None:
    redis = evicting(lone_redis)
    server = start_cqs_server(
        [redis.url], environment={"CQS_REDIS_EVICTION_ALLOWED": "true"}
    )  # start() returns once the server answers

    log = server.log_tail(20_000)
    assert "has maxmemory-policy allkeys-lru" in log
    assert "allowed by redis_eviction_allowed" in log
