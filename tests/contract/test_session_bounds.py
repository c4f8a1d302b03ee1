"""A session's calls stay bounded while its Cassandra node answers nothing, on a node of this
test's own (paused with SIGSTOP, resumed with SIGCONT).

docs/reliability.md promises that no call waits much past the Cassandra timeout. Under load
a frozen node fills the session's in-flight slots with statements that can only time out:
a statement queued behind them still fails within the timeout (+1 s), not after several.
Statements first prepared then do not wait for each other's prepares either. A lone
statement fails at the driver's own timeout, not only at the session's bound.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable

import pytest
from cassandra import OperationTimedOut

from cqs.cassandra_store import CassandraConnection, connect
from cqs.cassandra_store.session import DEFAULT_MAX_IN_FLIGHT, CassandraSession
from cqs.domain.errors import StorageUnavailable
from cqs.embedded.cassandra import EmbeddedCassandra
from tests.fixtures.cassandra_node import unique_keyspace

REQUEST_TIMEOUT = 1.0
CALL_BOUND = REQUEST_TIMEOUT + 1.0 + 0.5  # the session's own bound, and scheduling slack
CONCURRENT_CALLS = 3 * DEFAULT_MAX_IN_FLIGHT  # three waves of slots
NEW_STATEMENTS = 6
SELECT = "SELECT release_version FROM system.local"


async def timed(call: Awaitable[object]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        await call
    except Exception as exc:  # the outcome is what is asserted
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


async def wait_until_answering(session: CassandraSession, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            await session.ping()
            return
        except StorageUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


@pytest.fixture
async def session(own_cassandra: EmbeddedCassandra) -> AsyncIterator[CassandraSession]:
    session = await connect(CassandraConnection(
        (own_cassandra.contact_point,), unique_keyspace(), request_timeout=REQUEST_TIMEOUT,
    ))  # fmt: skip
    try:
        yield session
    finally:
        await session.close()


async def test_calls_and_prepares_stay_bounded_while_the_node_is_frozen(
    own_cassandra: EmbeddedCassandra, session: CassandraSession
) -> None:
    pid = own_cassandra.pid
    assert pid is not None
    new_statements = [f"{SELECT} LIMIT {n}" for n in range(1, NEW_STATEMENTS + 1)]
    await session.read(SELECT)  # prepared while the node answers
    os.kill(pid, signal.SIGSTOP)
    try:
        reads = await asyncio.gather(*(
            timed(session.read(SELECT)) for _ in range(CONCURRENT_CALLS)
        ))  # fmt: skip
        prepares = await asyncio.gather(*(
            timed(session.prepare(text, write=False)) for text in new_statements
        ))  # fmt: skip
    finally:
        os.kill(pid, signal.SIGCONT)

    slowest_read = max(seconds for seconds, _ in reads)
    assert slowest_read <= CALL_BOUND, (
        f"a read waited {slowest_read:.1f} s behind the frozen node's statements"
    )
    assert {type(exc) for _, exc in reads} == {StorageUnavailable}
    slowest_prepare = max(seconds for seconds, _ in prepares)
    assert slowest_prepare <= CALL_BOUND, (
        f"a prepare took {slowest_prepare:.1f} s: prepares waited for one another"
    )
    assert {type(exc) for _, exc in prepares} == {StorageUnavailable}

    # Back: the statements whose prepare failed are prepared on their next use.
    await wait_until_answering(session, 60.0)
    for text in new_statements:
        rows = await session.read(text)
        assert [row.release_version for row in rows] == [session.release_version]


async def test_a_lone_statement_to_a_frozen_node_fails_at_the_drivers_own_timeout(
    own_cassandra: EmbeddedCassandra, session: CassandraSession
) -> None:
    """Wall clock: the driver's request timeout is what is measured."""
    # With no other timer queued, the request's timer (cqs/cassandra_store/reactor.py
    # queues some without a wake-up) still fires at the Cassandra timeout, well before the
    # session's own bound of the timeout + 1 s.
    pid = own_cassandra.pid
    assert pid is not None
    await session.read(SELECT)
    await asyncio.sleep(0.2)  # its timer was cancelled and dropped: none is queued now
    os.kill(pid, signal.SIGSTOP)
    try:
        seconds, exc = await timed(session.read(SELECT))
    finally:
        os.kill(pid, signal.SIGCONT)
    assert isinstance(exc, StorageUnavailable)
    # The driver's timeout, not the session's bound, ended the call: its cause says so, and
    # it came before that bound. Only the lower bound is on the wall clock: on a loaded
    # machine the timer may fire late, which the cause still tells apart.
    assert isinstance(exc.__cause__, OperationTimedOut), repr(exc.__cause__)
    assert REQUEST_TIMEOUT - 0.05 <= seconds < REQUEST_TIMEOUT + 1.0, seconds
