"""One connected Cassandra session for cqs, and the bridge from driver futures to asyncio.

Owns the prepared-statement cache, awaitable reads and writes (bounded in flight), the
keyspace-wide agreed settings, and the translation of driver failures into
`StorageUnavailable`, once, here at the edge. Opening a session (cluster options, schema
creation) is `connection.py`'s. Imports the driver, `cqs.domain.errors` and
`cqs.cassandra_store.schema`; never the service, Redis or aiohttp.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import cassandra
import cassandra.protocol
from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.cluster import Session as DriverSession
from cassandra.connection import ConnectionException
from cassandra.query import PreparedStatement, SimpleStatement

from cqs.cassandra_store import schema
from cqs.domain.errors import StorageUnavailable

# Driver failures that mean "the store cannot answer now"; anything else (a CQL error) is a bug
# and propagates unchanged.
_UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    NoHostAvailable,
    cassandra.OperationTimedOut,
    cassandra.RequestExecutionException,  # Unavailable, ReadTimeout, WriteTimeout, ...
    cassandra.protocol.RequestExecutionException,  # Overloaded, IsBootstrapping
    cassandra.protocol.ServerError,
    ConnectionException,
    OSError,
    asyncio.TimeoutError,
)
# Error codes the driver has no class for (it raises a bare `ErrorMessage`) that still mean
# "not settled now": 0x1700 is CAS_WRITE_UNKNOWN (protocol v5), a lightweight transaction
# whose Paxos round may or may not have committed, like a timed-out write.
_UNAVAILABLE_ERROR_CODES = frozenset({0x1700})

DEFAULT_MAX_IN_FLIGHT = 128
_AGREED_SETTING_READS = 5
# How long after the first write of a setting racing writers may still be landing.
SETTING_SETTLE_MS = 2000

T = TypeVar("T")
Row = Any  # the driver's named-tuple rows
# Told about every statement when given: (backend, server label, operation, seconds, ok).
BackendObserver = Callable[[str, str, str, float, bool], None]
_CQL_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE)\s+(?:\w+\.)?(\w+)", re.IGNORECASE)


def statement_label(statement: Any) -> str:
    """`select messages`, `insert queues`...: what a statement does, for metrics."""
    query = getattr(getattr(statement, "prepared_statement", statement), "query_string", statement)
    if not isinstance(query, str):
        return "batch"
    verb = query.split(None, 1)[0].lower() if query.strip() else "statement"
    table = _CQL_TABLE.search(query)
    return f"{verb} {table.group(1)}" if table and verb != "create" else verb


@contextmanager
def unavailable_on_driver_errors(action: str) -> Iterator[None]:
    try:
        yield
    except StorageUnavailable:
        raise
    except _UNAVAILABLE_ERRORS as exc:
        raise StorageUnavailable(f"Cassandra is unavailable ({action}): {exc}") from exc
    except cassandra.protocol.ErrorMessage as exc:
        if exc.code not in _UNAVAILABLE_ERROR_CODES:
            raise
        raise StorageUnavailable(f"Cassandra is unavailable ({action}): {exc}") from exc


class CassandraSession:
    """A driver session for the cqs keyspace, with awaitable reads and writes; statements
    name their tables in full (the session binds no keyspace).

    Holds the driver's Cluster and Session; callers see rows, never driver futures.
    """

    def __init__(
        self,
        cluster: Cluster,
        session: DriverSession,
        keyspace: str,
        read_consistency: int,
        write_consistency: int,
        request_timeout: float,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        observe: BackendObserver | None = None,
        release_version: str = "",
    ) -> None:
        self._cluster = cluster
        self._release_version = release_version
        self._observe = observe
        self._operations: dict[str, str] = {}  # query text -> statement_label
        self._session = session
        self._keyspace = schema.checked_identifier(keyspace)
        self._read_consistency = read_consistency
        self._write_consistency = write_consistency
        self._request_timeout = request_timeout
        self._prepared: dict[tuple[str, bool], PreparedStatement] = {}
        self._preparing: dict[tuple[str, bool], asyncio.Future[PreparedStatement]] = {}
        # Past the driver's per-connection stream limit it fails requests with
        # NoHostAvailable; queueing here turns a burst into waiting instead of an outage.
        self._in_flight = asyncio.Semaphore(max_in_flight)

    @property
    def request_timeout(self) -> float:
        return self._request_timeout

    @property
    def release_version(self) -> str:
        """The server's `release_version` when connected ("4.1.5", "5.0.8", ...)."""
        return self._release_version

    @property
    def protocol_version(self) -> int:
        """The native protocol version in use (negotiated unless it was set)."""
        return int(self._cluster.protocol_version)

    @property
    def driver_cluster(self) -> Cluster:
        """The driver's Cluster, to inspect (its options, its hosts' up/down state); cqs's
        statements go through this session only."""
        return self._cluster

    @property
    def consistency(self) -> tuple[str, str]:
        """The (read, write) consistency level names of cqs's statements."""
        names = ConsistencyLevel.value_to_name
        return names[self._read_consistency], names[self._write_consistency]

    async def prepare(self, cql: str, *, write: bool) -> PreparedStatement:
        """The prepared statement for `cql`, prepared once per session.

        Concurrent callers of one statement share its prepare, and different statements
        prepare side by side: the driver's prepare waits for every node, so while a node is
        frozen one slow prepare must not hold up the others."""
        key = (cql, write)
        statement = self._prepared.get(key)
        if statement is not None:
            return statement
        preparing = self._preparing.get(key)
        if preparing is None:
            preparing = asyncio.ensure_future(self._prepare_now(cql, write))
            self._preparing[key] = preparing
            preparing.add_done_callback(partial(self._prepared_or_failed, key))
        return await asyncio.shield(preparing)  # a caller giving up leaves it to the others

    def _prepared_or_failed(
        self, key: tuple[str, bool], preparing: asyncio.Future[PreparedStatement]
    ) -> None:
        self._preparing.pop(key, None)  # a failed prepare is tried again by the next caller
        if not preparing.cancelled():
            preparing.exception()  # retrieved here when every caller gave up

    async def _prepare_now(self, cql: str, write: bool) -> PreparedStatement:
        # Table names are qualified (the session binds no keyspace), which also keeps two
        # keyspaces' statements apart on servers that identify them by text (CASSANDRA-15252).
        text = schema.qualified(cql, self._keyspace)
        statement = await self._run_blocking("prepare", self._session.prepare, text)
        if statement is None:
            raise StorageUnavailable(f"Cassandra did not prepare {cql!r}")
        statement.consistency_level = self._write_consistency if write else self._read_consistency
        self._prepared[(cql, write)] = statement
        return statement

    async def read(self, cql: str, parameters: Sequence[Any] = ()) -> list[Row]:
        return await self.execute(await self.prepare(cql, write=False), parameters)

    async def write(self, cql: str, parameters: Sequence[Any] = ()) -> None:
        await self.execute(await self.prepare(cql, write=True), parameters)

    async def write_if(self, cql: str, parameters: Sequence[Any] = ()) -> bool:
        """A lightweight transaction (`... IF NOT EXISTS`); whether it applied. Its Paxos
        round is LOCAL_SERIAL: linearizable within the data centre, and still possible
        while another data centre is down."""
        statement = await self.prepare(cql, write=True)
        statement.serial_consistency_level = ConsistencyLevel.LOCAL_SERIAL
        rows = await self.execute(statement, parameters)
        return bool(rows and rows[0][0])

    async def execute(self, statement: Any, parameters: Sequence[Any] | None = None) -> list[Row]:
        """Run one statement; all its rows (driver paging is off on every protocol version).

        Bounded as a whole, the wait for an in-flight slot included: while a node is frozen
        the slots fill with statements sent to it, and a queue behind them would otherwise
        make a call wait several timeouts (docs/reliability.md bounds every call)."""
        with unavailable_on_driver_errors("request"):
            # The driver's own timeout normally fires first; this bounds the call regardless.
            async with asyncio.timeout(self._request_timeout + 1.0):
                async with self._in_flight:
                    if self._observe is None:
                        return await self._execute(statement, parameters)
                    started = time.perf_counter()
                    coordinator: list[str] = []
                    ok = False
                    try:
                        rows = await self._execute(statement, parameters, coordinator)
                        ok = True
                        return rows
                    finally:
                        self._observe(
                            "cassandra", coordinator[0] if coordinator else "unknown",
                            self._operation(statement), time.perf_counter() - started, ok,
                        )

    def _operation(self, statement: Any) -> str:
        query = getattr(getattr(statement, "prepared_statement", statement), "query_string", "")
        label = self._operations.get(query) if isinstance(query, str) else None
        if label is None:
            label = statement_label(statement)
            if isinstance(query, str) and len(self._operations) < 1000:
                self._operations[query] = label
        return label

    async def _execute(
        self, statement: Any, parameters: Sequence[Any] | None, coordinator: list[str] | None = None
    ) -> list[Row]:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[list[Row]] = loop.create_future()

        def deliver(rows: Any) -> None:
            loop.call_soon_threadsafe(_settle, answer, list(rows or ()), None)

        def fail(exc: BaseException) -> None:
            loop.call_soon_threadsafe(_settle, answer, None, exc)

        # Submitted inline: on protocol v3 and later the driver takes a stream of the host's
        # connection without waiting (32k streams a connection). The answer comes back
        # through `answer` alone, so the loop is woken once per statement.
        try:
            response = self._session.execute_async(
                statement, parameters, timeout=self._request_timeout
            )
        except BaseException as exc:
            fail(exc)
            return await answer
        if coordinator is not None:  # the host the driver sent the statement to
            coordinator.append(str(getattr(response, "_current_host", None) or "unknown"))
        response.add_callbacks(deliver, fail)
        return await answer

    async def write_text(self, cql: str) -> None:
        """A write whose values are all literals in its text, at the write consistency.

        Not prepared: for statements whose text differs on every call, as CQL 3.0.0 takes
        `USING TTL` and `USING TIMESTAMP` values as literals only (`cqs migrate`'s copies).
        """
        statement = SimpleStatement(
            schema.qualified(cql, self._keyspace), consistency_level=self._write_consistency
        )
        await self.execute(statement)

    async def table_names(self) -> set[str]:
        """The tables of the session's keyspace, from schema metadata read now."""
        await self._run_schema("read schema", self._cluster.refresh_schema_metadata)
        keyspace = self._cluster.metadata.keyspaces.get(self._keyspace)
        return set(keyspace.tables) if keyspace is not None else set()

    async def change_schema(self, ddl: str) -> None:
        """One schema change (`DROP TABLE ...`); returns once the cluster agrees on it."""
        execute = partial(self._session.execute, ddl, timeout=self._request_timeout * 3)
        await self._run_schema("change schema", execute)

    async def _run_schema(self, action: str, call: Callable[..., T], *args: Any) -> T:
        """Schema calls wait for the cluster to agree on the schema besides the request."""
        bound = self._request_timeout * 3 + self._cluster.max_schema_agreement_wait + 1.0
        with unavailable_on_driver_errors(action):
            return await asyncio.wait_for(asyncio.to_thread(call, *args), bound)

    async def ping(self) -> None:
        """One cheap read, for readiness checks; StorageUnavailable when nobody answers."""
        await self.read("SELECT release_version FROM system.local")

    async def agreed_setting(self, name: str, candidate: bytes) -> bytes:
        """The value every process agrees on for `name`; `candidate` if nobody stored one yet.

        Without lightweight transactions: every writer writes at timestamp 1, and Cassandra
        resolves equal timestamps by the greater value, so racing writers converge on one
        value. A racing writer lands within one round trip of seeing the name empty, so a
        value younger than `SETTING_SETTLE_MS` is read again once it is that old.
        """
        select = f"SELECT value, written_ms FROM {schema.SETTINGS_TABLE} WHERE name = ?"
        stored = await self.read(select, [name])
        if not stored or stored[0].value is None:
            await self.write(
                f"INSERT INTO {schema.SETTINGS_TABLE} (name, value, written_ms)"
                " VALUES (?, ?, ?) USING TIMESTAMP 1",
                [name, candidate, _now_ms()],
            )
            stored = []
        for _ in range(_AGREED_SETTING_READS):
            if not stored or stored[0].value is None:
                await asyncio.sleep(0.1)  # a replica that missed the write (RF > 1, ONE)
            else:
                age_ms = _now_ms() - int(stored[0].written_ms or 0)
                if age_ms >= SETTING_SETTLE_MS:
                    return bytes(stored[0].value)
                await asyncio.sleep(min(SETTING_SETTLE_MS, SETTING_SETTLE_MS - age_ms) / 1000)
            stored = await self.read(select, [name])
        if stored and stored[0].value is not None:
            return bytes(stored[0].value)
        raise StorageUnavailable(f"setting {name!r} was written but cannot be read back")

    async def _run_blocking(self, action: str, call: Callable[..., T], *args: Any) -> T:
        with unavailable_on_driver_errors(action):
            return await asyncio.wait_for(
                asyncio.to_thread(call, *args), self._request_timeout + 1.0
            )

    async def close(self) -> None:
        await asyncio.to_thread(self._cluster.shutdown)


async def all_or_first_error(calls: Sequence[Awaitable[None]]) -> None:
    """Run every call to completion; then raise the first failure, if any."""
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


def _now_ms() -> int:
    return int(time.time() * 1000)


def _settle(
    answer: asyncio.Future[list[Row]], rows: list[Row] | None, exc: BaseException | None
) -> None:
    if answer.done():  # the caller gave up (timeout or cancellation)
        return
    if exc is not None:
        answer.set_exception(exc)
    else:
        answer.set_result(rows or [])
