"""Readiness through a Cassandra outage, on a Cassandra node of this test's own (paused with
SIGSTOP and resumed with SIGCONT), so the session's shared node stays up."""

from __future__ import annotations

import os
import signal

from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.observability.health import CASSANDRA_DOWN_MODE
from tests.fixtures.cqs_server import StartServer
from tests.observability.conftest import get_json, wait_for


def test_readiness_flips_to_503_while_cassandra_is_down_and_back_when_it_returns(
    own_cassandra: EmbeddedCassandra, redis_server: object, start_cqs_server: StartServer
) -> None:
    server = start_cqs_server(
        [redis_server.url],  # type: ignore[attr-defined]
        extra_args=["--cassandra-hosts", own_cassandra.contact_point],
    )
    assert get_json(server.url + "/ready")[0] == 200
    assert own_cassandra.pid is not None

    os.kill(own_cassandra.pid, signal.SIGSTOP)
    try:
        _, body = wait_for(
            lambda: (answer := get_json(server.url + "/ready"))[0] == 503 and answer,
            "readiness to report the Cassandra outage",
        )
        assert body["status"] == "degraded"
        assert body["cassandra"] == "unreachable"
        assert body["mode"] == CASSANDRA_DOWN_MODE
        assert set(body["redis"].values()) == {"ok"}
        assert get_json(server.url + "/health")[0] == 200
    finally:
        os.kill(own_cassandra.pid, signal.SIGCONT)

    _, body = wait_for(
        lambda: (answer := get_json(server.url + "/ready"))[0] == 200 and answer,
        "readiness to recover",
    )
    assert body["cassandra"] == "ok"
