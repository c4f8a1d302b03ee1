"""The wire scenarios again, with the cache on a real six-node Redis Cluster.

Owns the package's servers: one cluster (three primaries, three replicas, from Debian's
redis-server) for the whole package, and the two cqs servers over it that the scenario
fixtures of tests/wire/conftest.py reach through `cqs_server` and `clock_server`. Each
module here imports one scenario module's tests, so the same tests run over both protocols
against the cluster as against one server, with no copy to drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.fixtures.redis_cluster import LocalRedisCluster


@pytest.fixture(scope="package")
def wire_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    cluster = LocalRedisCluster(tmp_path_factory.mktemp("wire-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
def cqs_server(
    wire_cluster: LocalRedisCluster, start_cqs_server: StartServer
) -> Iterator[CqsProcess]:
    """Stopped with the package's cluster, not at the end of the session."""
    server = start_cqs_server(wire_cluster.urls)
    yield server
    server.stop()


@pytest.fixture(scope="package")
def clock_server(
    wire_cluster: LocalRedisCluster, start_cqs_server: StartServer
) -> Iterator[CqsProcess]:
    """The server of the tests that move time. It may share the cluster with `cqs_server`:
    on a cluster each process sweeps only the queues its own long polls wait on, so its
    clock never returns another server's messages early."""
    server = start_cqs_server(
        wire_cluster.urls, extra_args=["--expiry-trim-seconds", "1"], test_clock=True
    )
    yield server
    server.stop()
