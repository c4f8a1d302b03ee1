"""How cqs reaches its Cassandra keyspace: the connection settings and opening a session.

Owns `CassandraConnection` (one frozen value naming the cluster, the keyspace and how to
talk to it, built once by the composition root), cluster creation (protocol version,
consistency levels, request timeout, TCP_NODELAY) and schema creation when absent. Imports
the driver, `cqs.errors` and this package; never the service, Redis, aiohttp or
`cqs.settings` (the composition root turns Settings into a `CassandraConnection`).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

import cassandra
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

from cqs.cassandra_store import schema
from cqs.cassandra_store.session import (
    BackendObserver,
    CassandraSession,
    unavailable_on_driver_errors,
)

DEFAULT_REPLICATION: Mapping[str, str | int] = {
    "class": "SimpleStrategy",
    "replication_factor": 1,
}


@dataclass(frozen=True, slots=True)
class CassandraConnection:
    """Where the keyspace is and how to talk to it; the same for every session of a process.

    `replication` and `message_gc_grace_seconds` only matter to the first process that
    finds the keyspace or a table absent and creates it.
    """

    contact_points: tuple[str, ...]  # "host" or "host:port", every one on the same port
    keyspace: str
    replication: str | Mapping[str, str | int] = field(
        default_factory=lambda: dict(DEFAULT_REPLICATION)
    )
    protocol_version: int = 1
    read_consistency: str = "ONE"
    write_consistency: str = "ONE"
    request_timeout: float = 5.0  # seconds, per request and for connecting
    message_gc_grace_seconds: int = schema.DEFAULT_MESSAGE_GC_GRACE_SECONDS


def parse_contact_point(contact_point: str, default_port: int = 9042) -> tuple[str, int]:
    host, separator, port = contact_point.rpartition(":")
    if not separator:
        return contact_point, default_port
    return host, int(port)


def consistency_level(name: str) -> int:
    try:
        return int(ConsistencyLevel.name_to_value[name.upper()])
    except KeyError:
        raise ValueError(f"unknown Cassandra consistency level {name!r}") from None


async def connect(
    connection: CassandraConnection, *, observe: BackendObserver | None = None
) -> CassandraSession:
    """Connect, create the keyspace and tables if absent, and return the bound session.

    Raises StorageUnavailable when no contact point answers within the request timeout.
    """
    keyspace = schema.checked_identifier(connection.keyspace)
    request_timeout = connection.request_timeout
    endpoints = [parse_contact_point(point) for point in connection.contact_points]
    ports = {port for _, port in endpoints}
    if len(ports) != 1:
        raise ValueError("every Cassandra contact point must use the same native port")
    profile = ExecutionProfile(
        # The driver's default, named so it does not warn: token-aware over the local DC.
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
        consistency_level=consistency_level(connection.read_consistency),
        request_timeout=request_timeout,
    )
    cluster = Cluster(
        contact_points=[host for host, _ in endpoints],
        port=ports.pop(),
        protocol_version=connection.protocol_version,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        # Without it, small writes wait on Nagle + delayed ACK (tens of ms per batch).
        sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        connect_timeout=request_timeout,
        control_connection_timeout=request_timeout,
        max_schema_agreement_wait=max(10, int(request_timeout * 2)),
    )
    try:
        with unavailable_on_driver_errors("connect"):
            driver_session = await asyncio.wait_for(
                asyncio.to_thread(cluster.connect), request_timeout * 2 + 1.0
            )
        session = CassandraSession(
            cluster,
            driver_session,
            read_consistency=consistency_level(connection.read_consistency),
            write_consistency=consistency_level(connection.write_consistency),
            request_timeout=request_timeout,
            observe=observe,
        )
        await _create_schema(session, connection)
        await session.use_keyspace(keyspace)
    except BaseException:
        await asyncio.to_thread(cluster.shutdown)
        raise
    return session


async def _create_schema(session: CassandraSession, connection: CassandraConnection) -> None:
    """CQL 3.0.0 has no IF NOT EXISTS: look in the system tables, tolerate a racing creator."""
    keyspace = connection.keyspace
    keyspaces = await session.read(
        "SELECT keyspace_name FROM system.schema_keyspaces WHERE keyspace_name = ?", [keyspace]
    )
    if not keyspaces:
        await _create_once(session, schema.create_keyspace(keyspace, connection.replication))
    tables = await session.read(
        "SELECT columnfamily_name FROM system.schema_columnfamilies WHERE keyspace_name = ?",
        [keyspace],
    )
    existing = {row.columnfamily_name for row in tables}
    definitions = schema.table_definitions(keyspace, connection.message_gc_grace_seconds)
    for name, ddl in definitions.items():
        if name not in existing:
            await _create_once(session, ddl)


async def _create_once(session: CassandraSession, ddl: str) -> None:
    try:
        await session.execute(ddl)
    except cassandra.AlreadyExists:
        pass  # another process created it between our check and our CREATE
