"""Decisions of the Cassandra adapter: release versions, consistency defaults, the Cassandra
settings' defaults and wiring, and which connection failures mark a node down."""

from __future__ import annotations

import pytest
from cassandra import OperationTimedOut
from cassandra.connection import ConnectionException

from cqs.cassandra_store.compatibility import default_consistency, release_major_minor
from cqs.cassandra_store.connection import TimeoutConvictionPolicy, replication_factor
from cqs.cassandra_store.schema import qualified
from cqs.main import cassandra_connection
from cqs.settings import Settings, load_settings


@pytest.mark.parametrize(
    ("release_version", "expected"),
    [("1.2.0", (1, 2)), ("3.11.17", (3, 11)), ("4.1.5", (4, 1)), ("5.0.2", (5, 0)),
     ("3.0.8", (3, 0)), ("5.0-beta1", (5, 0)), ("", (0, 0)), ("unknown", (0, 0))],
)
def test_release_versions_read_as_major_and_minor(
    release_version: str, expected: tuple[int, int]
) -> None:
    assert release_major_minor(release_version) == expected


@pytest.mark.parametrize(("replicas", "expected"), [(1, "ONE"), (2, "LOCAL_QUORUM"), (3, "LOCAL_QUORUM")])
def test_the_default_consistency_is_one_for_one_replica_and_a_local_quorum_for_more(
    replicas: int, expected: str
) -> None:
    assert default_consistency(replicas) == expected


class _Strategy:
    def __init__(self, **attributes: object) -> None:
        self.__dict__.update(attributes)


def test_replication_factor_is_the_largest_of_the_data_centres() -> None:
    assert replication_factor(_Strategy(replication_factor=2)) == 2
    assert replication_factor(_Strategy(dc_replication_factors={"a": 3, "b": 1})) == 3
    assert replication_factor(_Strategy(options_map={"replication_factor": "3/1"})) == 3
    assert replication_factor(_Strategy()) == 1


def test_cassandra_defaults_negotiate_the_protocol_and_choose_consistency_from_replicas() -> None:
    connection = cassandra_connection(Settings())
    assert connection.protocol_version is None
    assert connection.read_consistency is None and connection.write_consistency is None


def test_cassandra_defaults_heartbeat_every_5_s_and_reconnect_at_most_10_s_apart() -> None:
    connection = cassandra_connection(Settings())
    assert (connection.heartbeat_interval, connection.heartbeat_timeout) == (5.0, 5.0)
    assert (connection.reconnect_base_delay, connection.reconnect_max_delay) == (1.0, 10.0)


def test_cassandra_settings_that_are_set_reach_the_connection() -> None:
    settings = load_settings(environ={
        "CQS_CASSANDRA_PROTOCOL_VERSION": "4",
        "CQS_CASSANDRA_READ_CONSISTENCY": "LOCAL_QUORUM",
        "CQS_CASSANDRA_WRITE_CONSISTENCY": "QUORUM",
        "CQS_CASSANDRA_HEARTBEAT_INTERVAL_SECONDS": "2",
        "CQS_CASSANDRA_HEARTBEAT_TIMEOUT_SECONDS": "3.5",
        "CQS_CASSANDRA_RECONNECT_BASE_SECONDS": "0.5",
        "CQS_CASSANDRA_RECONNECT_MAX_SECONDS": "30",
    })
    connection = cassandra_connection(settings)
    assert connection.protocol_version == 4
    assert (connection.read_consistency, connection.write_consistency) == (
        "LOCAL_QUORUM", "QUORUM"
    )
    assert (connection.heartbeat_interval, connection.heartbeat_timeout) == (2.0, 3.5)
    assert (connection.reconnect_base_delay, connection.reconnect_max_delay) == (0.5, 30.0)


def test_a_timed_out_heartbeat_or_connection_attempt_marks_the_node_down() -> None:
    policy = TimeoutConvictionPolicy(host=None)
    # What the driver's heartbeat and connection factory raise (3.29 and later).
    assert policy.add_failure(OperationTimedOut("Connection heartbeat timeout after 5 seconds"))
    assert policy.add_failure(OperationTimedOut("Timed out creating connection (5 seconds)"))
    assert policy.add_failure(ConnectionException("Connection reset by peer"))
    assert policy.add_failure(None)  # a connection closed under the pool
    # A request that timed out names its hosts' errors: a slow request, the node stays up.
    assert not policy.add_failure(OperationTimedOut({"127.0.0.2:9042": "Client request timeout"}))


def test_the_drivers_protocol_downgrade_warnings_are_dropped_from_the_log() -> None:
    from logging import WARNING, LogRecord

    from cqs.operations.logs import not_a_protocol_downgrade as _not_a_protocol_downgrade

    def record(message: str) -> LogRecord:
        return LogRecord("cassandra.cluster", WARNING, __file__, 1, message, None, None)

    assert not _not_a_protocol_downgrade(
        record("Downgrading core protocol version from 5 to 4 for 127.0.0.1:9042.")
    )
    assert _not_a_protocol_downgrade(record("Host 127.0.0.1:9042 has been marked down"))


@pytest.mark.parametrize(
    ("cql", "expected"),
    [
        ("SELECT value FROM settings WHERE name = ?", "SELECT value FROM ks.settings WHERE name = ?"),
        ("INSERT INTO queue_messages (a) VALUES (?) USING TTL 5",
         "INSERT INTO ks.queue_messages (a) VALUES (?) USING TTL 5"),
        ("update queue_purges SET x = ?", "update ks.queue_purges SET x = ?"),
        ("DELETE payload FROM queue_messages WHERE a = ?",
         "DELETE payload FROM ks.queue_messages WHERE a = ?"),
        ("SELECT release_version FROM system.local", "SELECT release_version FROM system.local"),
        ("SELECT a FROM other.settings", "SELECT a FROM other.settings"),
    ],
)
def test_statements_name_their_tables_in_full_and_leave_qualified_names_alone(
    cql: str, expected: str
) -> None:
    assert qualified(cql, "ks") == expected


def test_a_keyspace_that_is_no_identifier_is_refused_before_any_statement_runs() -> None:
    with pytest.raises(ValueError):
        qualified("SELECT a FROM settings", "ks; DROP")
