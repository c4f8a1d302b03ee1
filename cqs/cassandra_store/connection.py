"""How cqs reaches its Cassandra keyspace: the connection settings and opening a session.

Owns `CassandraConnection` (one frozen value naming the cluster, the keyspace and how to
talk to it, built once by the composition root), cluster creation (protocol version,
consistency levels, request timeout, TCP_NODELAY, credentials and TLS, and how the driver
notices a node that stopped answering and comes back to it: heartbeat, conviction,
reconnection delays) and
schema creation when absent. Which keyspaces and tables exist comes from the driver's
cluster metadata, which reads each server version's own system tables (cqs never queries
`system.schema_*` itself). Imports the driver, `cqs.domain.errors` and this package; never the
service, Redis, aiohttp or `cqs.settings` (the composition root turns Settings into a
`CassandraConnection`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import cassandra
from cassandra import ConsistencyLevel, OperationTimedOut
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.cluster import Session as DriverSession
from cassandra.policies import (
    ConvictionPolicy,
    DCAwareRoundRobinPolicy,
    ExponentialReconnectionPolicy,
    TokenAwarePolicy,
)
from cassandra.timestamps import MonotonicTimestampGenerator

from cqs.cassandra_store import compatibility, reactor, schema
from cqs.cassandra_store.session import (
    BackendObserver,
    CassandraSession,
    unavailable_on_driver_errors,
)

DEFAULT_REPLICATION: Mapping[str, str | int] = {
    "class": "SimpleStrategy",
    "replication_factor": 1,
}


log = logging.getLogger("cqs.cassandra")
T = TypeVar("T")


class KeyspaceNeedsMigration(RuntimeError):
    """The keyspace holds tables of a cqs version before queue identity held the account
    and region, not yet copied by `cqs migrate`; serving it would hide every queue."""


class KeyspaceNotFound(LookupError):
    """`connect(..., migrating=True)` found no keyspace of that name (it creates none)."""


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
    # None: negotiated (the driver starts at its newest version and steps down until the
    # server accepts one: v5 on Cassandra 4.0+, v4 on 3.11 and ScyllaDB).
    protocol_version: int | None = None
    # The data centre whose nodes coordinate (None: the driver takes the data centre of the
    # first contact point it reaches, and never sends to another).
    local_datacenter: str | None = None
    # None: chosen from the keyspace's replication and the server's version
    # (`compatibility.default_consistency`): ONE for one replica, LOCAL_QUORUM for more.
    read_consistency: str | None = None
    write_consistency: str | None = None
    request_timeout: float = 5.0  # seconds, per request and for connecting
    # Every `heartbeat_interval` the driver sends a heartbeat on each connection that received
    # nothing since the last round; no answer within `heartbeat_timeout` marks the node down
    # (`TimeoutConvictionPolicy`). A frozen node keeps its sockets open, so nothing else
    # notices it soon: it drops out 1-2 intervals plus the timeout after it froze.
    heartbeat_interval: float = 5.0
    heartbeat_timeout: float = 5.0
    # Between attempts to reconnect to a node marked down: the base, doubled at each failed
    # attempt up to the max (the driver's default max is 600 s).
    reconnect_base_delay: float = 1.0
    reconnect_max_delay: float = 10.0
    message_gc_grace_seconds: int = schema.DEFAULT_MESSAGE_GC_GRACE_SECONDS
    # PasswordAuthenticator credentials; None: the cluster asks for none.
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # Client-to-node encryption; None: plain connections.
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False, compare=False)
    # The wall clock the write timestamps come from (seconds since the epoch). Cassandra
    # keeps the write with the highest timestamp: a delete stamped earlier than the insert
    # it follows (a sender whose clock runs ahead) would be ignored.
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)


class ClockTimestamps(MonotonicTimestampGenerator):  # type: ignore[misc]  # untyped driver
    """The driver's client-side write timestamps, read from `clock` instead of the host's
    `time.time()`, and still strictly increasing."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock

    def __call__(self) -> int:
        with self.lock:
            return int(self._next_timestamp(now=int(self._clock() * 1e6), last=self.last))


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What `connect` learnt about the cluster and the keyspace."""

    release_version: str
    protocol_version: int
    replication_strategy: str
    replication_factor: int
    read_consistency: str
    write_consistency: str


def parse_contact_point(contact_point: str, default_port: int = 9042) -> tuple[str, int]:
    host, separator, port = contact_point.rpartition(":")
    if not separator:
        return contact_point, default_port
    return host, int(port)


def reconnection_policy(connection: CassandraConnection) -> ExponentialReconnectionPolicy:
    """The driver's reconnection schedule for a node marked down; refuses delays and
    heartbeat timings that are not positive numbers of seconds."""
    timings = {
        "heartbeat interval": connection.heartbeat_interval,
        "heartbeat timeout": connection.heartbeat_timeout,
        "reconnection base delay": connection.reconnect_base_delay,
        "reconnection max delay": connection.reconnect_max_delay,
    }
    for name, seconds in timings.items():
        if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"Cassandra {name} must be a positive number of seconds: {seconds!r}")
    if connection.reconnect_max_delay < connection.reconnect_base_delay:
        raise ValueError(
            f"Cassandra reconnection max delay ({connection.reconnect_max_delay:g} s) must not"
            f" be less than its base delay ({connection.reconnect_base_delay:g} s)"
        )
    # max_attempts=None: the driver's default of 64 attempts would, with a short max delay,
    # give up on a node that stays down for more than about ten minutes.
    return ExponentialReconnectionPolicy(
        connection.reconnect_base_delay, connection.reconnect_max_delay, max_attempts=None
    )


class PasswordAuthProvider(PlainTextAuthProvider):  # type: ignore[misc]  # untyped driver
    """The driver's plain-text (SASL PLAIN) credentials, never shown in a repr."""

    def __init__(self, username: str, password: str) -> None:
        super().__init__(username=username, password=password)

    def __repr__(self) -> str:
        return f"PasswordAuthProvider(username={self.username!r})"


class TimeoutConvictionPolicy(ConvictionPolicy):  # type: ignore[misc]  # untyped driver
    """Marks a node down on any failure of a connection to it, a timed-out heartbeat or
    connection attempt included.

    The driver's own policy lets timeouts pass: a heartbeat that times out closes that one
    connection and the node stays up, so a frozen node (sockets open, nothing answered)
    stays in every query plan, and each request sent its way times out or waits for a
    connection that never opens. A request timeout (OperationTimedOut carrying the
    per-host errors) is a slow request, not a dead node, and never convicts.
    """

    def add_failure(self, connection_exc: BaseException | None) -> bool:
        request_timeout = isinstance(connection_exc, OperationTimedOut) and isinstance(
            connection_exc.errors, Mapping
        )
        return not request_timeout

    def reset(self) -> None:
        pass


def consistency_level(name: str) -> int:
    try:
        return int(ConsistencyLevel.name_to_value[name.upper()])
    except KeyError:
        raise ValueError(f"unknown Cassandra consistency level {name!r}") from None


async def connect(
    connection: CassandraConnection,
    *,
    observe: BackendObserver | None = None,
    migrating: bool = False,
) -> CassandraSession:
    """Connect, create the keyspace and tables if absent, and return the bound session.

    Raises StorageUnavailable when no contact point answers within the request timeout,
    and KeyspaceNeedsMigration when the keyspace still holds the tables of an earlier cqs
    version, not yet copied by `cqs migrate`. `migrating` is for `cqs migrate` alone: the
    legacy tables are no reason to refuse, and an absent keyspace is not created
    (KeyspaceNotFound); missing tables of today's schema are created as for a server.
    """
    keyspace = schema.checked_identifier(connection.keyspace)
    for name in (connection.read_consistency, connection.write_consistency):
        if name:
            consistency_level(name)  # a typo fails here, not at the first statement
    reconnection = reconnection_policy(connection)  # and so do timings that are not positive
    request_timeout = connection.request_timeout
    cluster = build_cluster(connection, reconnection)
    try:
        with unavailable_on_driver_errors("connect"):
            driver_session = await asyncio.wait_for(
                asyncio.to_thread(cluster.connect), request_timeout * 2 + 1.0
            )
        # Whole results (no driver paging): callers page with LIMIT and token()/clustering
        # bounds themselves.
        driver_session.default_fetch_size = None
        facts = await _prepare_keyspace(
            cluster, driver_session, connection, migrating=migrating
        )
        log.info(
            "Cassandra %s, protocol v%d, keyspace %s (%s, %d replica(s)): reads %s, writes %s",
            facts.release_version, facts.protocol_version, keyspace,
            facts.replication_strategy, facts.replication_factor,
            facts.read_consistency, facts.write_consistency,
        )
        session = CassandraSession(
            cluster,
            driver_session,
            keyspace,
            read_consistency=consistency_level(facts.read_consistency),
            write_consistency=consistency_level(facts.write_consistency),
            request_timeout=request_timeout,
            observe=observe,
            release_version=facts.release_version,
        )
    except BaseException:
        await asyncio.to_thread(cluster.shutdown)
        raise
    return session


def build_cluster(
    connection: CassandraConnection,
    reconnection: ExponentialReconnectionPolicy | None = None,
) -> Cluster:
    """The driver's Cluster for `connection`, not yet connected."""
    request_timeout = connection.request_timeout
    endpoints = [parse_contact_point(point) for point in connection.contact_points]
    ports = {port for _, port in endpoints}
    if len(ports) != 1:
        raise ValueError("every Cassandra contact point must use the same native port")
    profile = ExecutionProfile(
        # The driver's default, named so it does not warn: token-aware over the local DC.
        load_balancing_policy=TokenAwarePolicy(
            DCAwareRoundRobinPolicy(local_dc=connection.local_datacenter or "")
        ),
        # For the statements cqs does not prepare (schema changes), as the driver's default.
        consistency_level=ConsistencyLevel.LOCAL_ONE,
        request_timeout=request_timeout,
    )
    schema_agreement_wait = max(10, int(request_timeout * 2))
    options: dict[str, Any] = {}
    if connection.protocol_version:
        options["protocol_version"] = connection.protocol_version
    if connection.username is not None:
        options["auth_provider"] = PasswordAuthProvider(
            connection.username, connection.password or ""
        )
    if connection.ssl_context is not None:
        options["ssl_context"] = connection.ssl_context
    cluster = Cluster(
        contact_points=[host for host, _ in endpoints],
        port=ports.pop(),
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        # Without it, small writes wait on Nagle + delayed ACK (tens of ms per batch).
        sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        connect_timeout=request_timeout,
        control_connection_timeout=request_timeout,
        max_schema_agreement_wait=schema_agreement_wait,
        idle_heartbeat_interval=connection.heartbeat_interval,
        idle_heartbeat_timeout=connection.heartbeat_timeout,
        reconnection_policy=reconnection or reconnection_policy(connection),
        conviction_policy_factory=TimeoutConvictionPolicy,
        connection_class=reactor.connection_class(),
        timestamp_generator=ClockTimestamps(connection.clock),
        **options,
    )
    return cluster


async def _prepare_keyspace(
    cluster: Cluster,
    driver_session: DriverSession,
    connection: CassandraConnection,
    *,
    migrating: bool = False,
) -> ServerFacts:
    """Create what is missing of the keyspace; learn the server version and replication."""
    timeout = connection.request_timeout
    # A schema change waits for the cluster to agree on the new schema after it is applied.
    bound = timeout * 3 + cluster.max_schema_agreement_wait + 1.0

    async def blocking(action: str, call: Callable[..., T], *args: Any) -> T:
        with unavailable_on_driver_errors(action):
            return await asyncio.wait_for(asyncio.to_thread(call, *args), bound)

    local = await blocking(
        "read release_version",
        driver_session.execute, "SELECT release_version FROM system.local",
    )
    release_version = str(local.one().release_version)
    keyspace = connection.keyspace
    # Another process may have created the keyspace since this one connected.
    await blocking("read schema", cluster.refresh_schema_metadata)
    if keyspace not in cluster.metadata.keyspaces:
        if migrating:
            raise KeyspaceNotFound(f"there is no keyspace {keyspace}")
        ddl = schema.create_keyspace(keyspace, connection.replication)
        await blocking("create keyspace", _create_once, driver_session, ddl, timeout)
        await blocking("read schema", cluster.refresh_schema_metadata)
    existing = set(cluster.metadata.keyspaces[keyspace].tables)
    if not migrating and schema.LEGACY_QUEUES_TABLE in existing and not await blocking(
        "read settings", _migrated, driver_session, keyspace, existing, timeout
    ):
        raise KeyspaceNeedsMigration(
            f"keyspace {keyspace} was written by an earlier cqs version; stop every cqs"
            " process and run `cqs migrate` with the same Cassandra settings (see"
            " docs/operations.md, Upgrading)"
        )
    definitions = schema.table_definitions(keyspace, connection.message_gc_grace_seconds)
    created = False
    for name, ddl in definitions.items():
        if name not in existing:
            await blocking("create table", _create_once, driver_session, ddl, timeout)
            created = True
    if created:
        await blocking("read schema", cluster.refresh_schema_metadata)
    metadata = cluster.metadata.keyspaces[keyspace]
    strategy = metadata.replication_strategy
    strategy_name = str(getattr(strategy, "name", type(strategy).__name__))
    replicas = replication_factor(strategy)
    automatic = compatibility.default_consistency(replicas)
    return ServerFacts(
        release_version=release_version,
        protocol_version=int(cluster.protocol_version),
        replication_strategy=strategy_name,
        replication_factor=replicas,
        read_consistency=(connection.read_consistency or automatic).upper(),
        write_consistency=(connection.write_consistency or automatic).upper(),
    )


def replication_factor(strategy: Any) -> int:
    """Replicas of each row: SimpleStrategy's factor, or the largest per data centre."""
    simple = getattr(strategy, "replication_factor", None)
    if isinstance(simple, int):
        return simple
    per_dc = getattr(strategy, "dc_replication_factors", None)
    if isinstance(per_dc, Mapping) and per_dc:
        return max(int(str(value).split("/")[0]) for value in per_dc.values())
    options = getattr(strategy, "options_map", None) or {}
    try:
        return int(str(options.get("replication_factor", 1)).split("/")[0])
    except ValueError:
        return 1


def _migrated(
    driver_session: DriverSession, keyspace: str, tables: set[str], timeout: float
) -> bool:
    """Whether `cqs migrate` finished copying the legacy tables of the keyspace."""
    if schema.SETTINGS_TABLE not in tables:
        return False
    found = driver_session.execute(
        f"SELECT value FROM {keyspace}.{schema.SETTINGS_TABLE} WHERE name = %s",
        [schema.SCHEMA_MIGRATED_SETTING],
        timeout=timeout,
    ).one()
    return found is not None and found.value is not None


def _create_once(driver_session: DriverSession, ddl: str, timeout: float) -> None:
    """CQL 3.0.0 has no IF NOT EXISTS: tolerate a process that created it first."""
    try:
        driver_session.execute(ddl, timeout=timeout * 3)
    except cassandra.AlreadyExists:
        pass  # another process created it between our look and our CREATE
