"""How a session notices a Cassandra node that stops answering, checked on the embedded node.

The heartbeat, reconnection and conviction settings given as `CQS_*` variables reach the
driver's Cluster of a real session, and timings that are not positive numbers of seconds
(or a max reconnection delay below the base) are refused before anything connects. What
they do to a frozen node of a cluster is tests/cluster/test_node_frozen.py's.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

import pytest
from cassandra import OperationTimedOut

from cqs.cassandra_store import connect, reactor
from cqs.main import cassandra_connection
from cqs.settings import load_settings
from tests.fixtures.cassandra_node import CassandraTestSettings, unique_keyspace

# The protocol the embedded Cassandra 5.0 speaks.
SERVER_PROTOCOL = 5


def environment(settings: CassandraTestSettings, **variables: str) -> dict[str, str]:
    return {
        "CQS_CASSANDRA_HOSTS": ",".join(settings.contact_points),
        "CQS_CASSANDRA_KEYSPACE": unique_keyspace(),
        "CQS_CASSANDRA_TIMEOUT_SECONDS": str(settings.request_timeout),
        **variables,
    }


async def test_heartbeat_and_reconnection_settings_reach_the_drivers_cluster(
    cassandra_settings: CassandraTestSettings,
) -> None:
    settings = load_settings(environ=environment(
        cassandra_settings,
        CQS_CASSANDRA_HEARTBEAT_INTERVAL_SECONDS="3",
        CQS_CASSANDRA_HEARTBEAT_TIMEOUT_SECONDS="4",
        CQS_CASSANDRA_RECONNECT_BASE_SECONDS="0.5",
        CQS_CASSANDRA_RECONNECT_MAX_SECONDS="8",
    ))  # fmt: skip
    session = await connect(cassandra_connection(settings))
    try:
        cluster = session.driver_cluster
        assert session.protocol_version == SERVER_PROTOCOL  # heartbeats work on v1 and v5
        assert (cluster.idle_heartbeat_interval, cluster.idle_heartbeat_timeout) == (3.0, 4.0)
        delays = list(itertools.islice(cluster.reconnection_policy.new_schedule(), 200))
        # Doubling from the base (the driver adds +-15 % jitter) up to the max, never past
        # it, and never giving up: the driver's default schedule ends after 64 attempts.
        assert 0.5 <= delays[0] <= 0.5 * 1.15
        assert max(delays) <= 8.0
        assert len(delays) == 200 and delays[-1] >= 8.0 * 0.85
        [host] = cluster.metadata.all_hosts()
        assert host.is_up
        # A heartbeat that times out convicts the node (the driver's own policy would not).
        assert host.conviction_policy.add_failure(
            OperationTimedOut("Connection heartbeat timeout after 4 seconds")
        )
        await session.ping()
    finally:
        await session.close()


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"CQS_CASSANDRA_HEARTBEAT_INTERVAL_SECONDS": "0"},
         "heartbeat interval must be a positive number of seconds: 0.0"),
        ({"CQS_CASSANDRA_HEARTBEAT_TIMEOUT_SECONDS": "-5"},
         "heartbeat timeout must be a positive number of seconds: -5.0"),
        ({"CQS_CASSANDRA_RECONNECT_BASE_SECONDS": "nan"},
         "reconnection base delay must be a positive number of seconds: nan"),
        ({"CQS_CASSANDRA_RECONNECT_MAX_SECONDS": "inf"},
         "reconnection max delay must be a positive number of seconds: inf"),
        ({"CQS_CASSANDRA_RECONNECT_BASE_SECONDS": "20", "CQS_CASSANDRA_RECONNECT_MAX_SECONDS": "5"},
         r"reconnection max delay \(5 s\) must not be less than its base delay \(20 s\)"),
    ],
)  # fmt: skip
async def test_heartbeat_and_reconnection_timings_that_make_no_sense_fail_before_connecting(
    cassandra_settings: CassandraTestSettings, variables: dict[str, str], message: str
) -> None:
    settings = load_settings(environ=environment(cassandra_settings, **variables))
    with pytest.raises(ValueError, match=message):
        await connect(cassandra_connection(settings))


async def test_request_timers_queued_without_a_wake_up_still_fire_on_time(
    cassandra_settings: CassandraTestSettings,
) -> None:
    """Wall clock: the driver's timers firing on time is what is measured."""
    # cqs's connection class queues a timer without waking the driver's event thread when
    # an earlier timer will wake it anyway: the later timers must still fire, on time.
    session = await connect(cassandra_connection(load_settings(environ=environment(
        cassandra_settings
    ))))
    try:
        connection_class = session.driver_cluster.connection_class
        assert connection_class is reactor.connection_class()
        fired: dict[str, float] = {}
        started = time.monotonic()

        def record(name: str) -> Callable[[], None]:
            return lambda: fired.setdefault(name, time.monotonic() - started)

        connection_class.create_timer(0.4, record("first"))
        await asyncio.sleep(0.05)  # the event thread has queued it: later ones need no wake
        later = [
            connection_class.create_timer(0.4 + 0.1 * n, record(f"later {n}")) for n in range(1, 6)
        ]
        cancelled = connection_class.create_timer(0.5, record("cancelled"))
        cancelled.cancel()
        await asyncio.sleep(1.5)
        assert sorted(fired) == sorted(["first", *(f"later {n}" for n in range(1, 6))])
        for n in range(1, 6):
            assert 0.4 + 0.1 * n <= fired[f"later {n}"] + 0.01 < 0.4 + 0.1 * n + 0.3, fired
        assert all(timer.end > 0 for timer in later)
    finally:
        await session.close()
