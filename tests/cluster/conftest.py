"""The load the cluster tests run while they hurt Cassandra nodes, and how they read a node.

Owns, for the tests in this directory only:
- `TimedClient`: the benchmarks' AWS JSON 1.0 client (benchmarks/harness/sqs_wire.py) that also
  keeps every call's action, start, duration and outcome (the time bound covers failed
  calls too);
- `ClusterLoad`: producers (SendMessage and SendMessageBatch) and long-polling consumers
  (ReceiveMessage + DeleteMessageBatch) on every given server, all recording into one
  `DeliveryLedger` (benchmarks/harness/delivery_ledger.py), which judges the run by message id;
- `message_ids_on_node`: the message ids one node holds, read at consistency ONE through
  that node alone (whether it caught up after a restart);
- `wait_for_logged` and the patterns `marked_down`, `marked_up`, `reconnect_failed`: when
  a `cqs serve` process's driver marked a node down, failed to reconnect to it and had it
  back, read from the lines the driver logs (its own wording, cassandra-driver 3.29+).

The clusters themselves come from tests/fixtures/cassandra_cluster.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy

from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict
from benchmarks.harness.sqs_wire import (
    CALL_ERRORS,
    ConsumerPool,
    PollPlan,
    SendPlan,
    SqsCallError,
    SqsJsonClient,
    error_code,
    send_messages,
)
from cqs.cassandra_store import reactor, schema
from tests.fixtures.cqs_server import CqsProcess

VISIBILITY_SECONDS = 30  # longer than any phase of a test: every repeat would be early


@dataclass(frozen=True)
class CallRecord:
    action: str
    started: float  # time.time()
    seconds: float
    outcome: str  # "ok" or the error code
    status: int  # the HTTP status (0: no answer)


class TimedClient(SqsJsonClient):
    def __init__(self, session: aiohttp.ClientSession, endpoint: str) -> None:
        super().__init__(session, endpoint)
        self.endpoint = endpoint.rstrip("/")
        self.calls: list[CallRecord] = []

    async def call(
        self, action: str, payload: Mapping[str, Any], wait_seconds: float = 0
    ) -> dict[str, Any]:
        started = time.time()
        try:
            reply = await super().call(action, payload, wait_seconds)
        except CALL_ERRORS as exc:
            status = exc.status if isinstance(exc, SqsCallError) else 0
            self.calls.append(
                CallRecord(action, started, time.time() - started, error_code(exc), status)
            )
            raise
        self.calls.append(CallRecord(action, started, time.time() - started, "ok", 200))
        return reply

    def queue_url(self, name: str) -> str:
        return f"{self.endpoint}/000000000000/{name}"


async def until_acknowledged(
    ledger: DeliveryLedger, more: int, seconds: float, since: float = 0.0
) -> int:
    """Wait until `more` sends asked after `since` (time.time()) were acknowledged in
    `ledger`; returns how many were (fewer only if `seconds` ran out)."""
    deadline = time.monotonic() + seconds
    while True:
        count = sum(1 for a in ledger.acknowledged if a.requested_at > since)
        if count >= more or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.2)


class ClusterLoad:
    """On every client: `producers` send tasks and `polls` long polls on queue `queue`."""

    def __init__(
        self, clients: Sequence[TimedClient], queue: str, run: str,
        producers: int = 2, polls: int = 4, ledger: DeliveryLedger | None = None,
    ) -> None:
        self.clients = list(clients)
        self.ledger = ledger if ledger is not None else DeliveryLedger()
        self._queue = queue
        self._run = run
        self._producers = producers
        self._stopping = asyncio.Event()
        self._pools = [
            ConsumerPool(client, self.ledger, PollPlan(
                [client.queue_url(queue)], polls, wait_seconds=1,
                visibility_seconds=VISIBILITY_SECONDS,
            ))
            for client in self.clients
        ]  # fmt: skip
        self._senders: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for pool in self._pools:
            pool.start()
        self._senders = [
            asyncio.create_task(send_messages(
                client, self.ledger,
                SendPlan([client.queue_url(self._queue)], 10**9, self._producers,
                         f"{self._run}-{index}"),
                self._stopping,
            ))
            for index, client in enumerate(self.clients)
            if self._producers
        ]  # fmt: skip

    async def until_acknowledged(self, more: int, seconds: float, since: float = 0.0) -> int:
        return await until_acknowledged(self.ledger, more, seconds, since)

    async def stop_producing(self) -> None:
        self._stopping.set()
        await asyncio.gather(*self._senders)

    async def halt(self) -> None:
        """Stop producing and consuming wherever the queue stands, as clients that go away
        (long polls in flight get a second to be answered and their messages deleted)."""
        await self.stop_producing()
        for pool in self._pools:
            await pool.stop(grace_seconds=1)

    async def drain(self, seconds: float) -> bool:
        """Stop producing; consume until every acknowledged message was deleted."""
        await self.stop_producing()
        deadline = time.monotonic() + seconds
        while self.ledger.undeleted_count():
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)  # a repeat of what was just deleted would show up here
        for pool in self._pools:
            await pool.stop(grace_seconds=5)
        return self.ledger.undeleted_count() == 0

    async def drain_until_empty(self, seconds: float) -> bool:
        """Stop producing; consume until every acknowledged message was delivered and the
        queue, as the first client's server counts it, holds none, visible or in flight.
        For drills that kill API processes: a delete whose answer died with its process may
        well have been done, which the ledger cannot know."""
        await self.stop_producing()
        client = self.clients[0]
        counts = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        deadline = time.monotonic() + seconds
        empty = False
        while time.monotonic() < deadline:
            if not self.ledger.undelivered_count():
                with contextlib.suppress(*CALL_ERRORS):
                    found = await client.queue_attributes(client.queue_url(self._queue), counts)
                    empty = all(found.get(name) == "0" for name in counts)
                    if empty:
                        break
            await asyncio.sleep(0.5)
        await asyncio.sleep(2.0)  # a repeat of what was just deleted would show up here
        for pool in self._pools:
            await pool.stop(grace_seconds=5)
        return empty

    def calls(self) -> list[CallRecord]:
        return [call for client in self.clients for call in client.calls]

    def describe(self, verdict: Verdict) -> str:
        slowest = max(self.calls(), key=lambda c: c.seconds, default=None)
        return (
            f"sent {verdict.sent}, received {verdict.received}, lost {len(verdict.lost)}, "
            f"deliveries {verdict.deliveries}, early duplicates {verdict.early_duplicates}, "
            f"after delete {verdict.deliveries_after_delete}, received although the send "
            f"failed {verdict.received_unacknowledged}, errors {dict(self.ledger.errors)}, "
            f"slowest call {slowest}"
        )


async def started_load(clients: Sequence[TimedClient], run: str) -> ClusterLoad:
    """Create queue `<run>-load` and run a ClusterLoad on it until 100 sends were
    acknowledged: the load is flowing before a fault is injected."""
    await clients[0].create_queue(f"{run}-load")
    load = ClusterLoad(clients, f"{run}-load", run)
    load.start()
    assert await load.until_acknowledged(100, 60) >= 100, load.describe(load.ledger.verdict())
    return load


def message_ids_on_node(contact_point: str, keyspace: str, consistency: str = "ONE") -> set[str]:
    """Every message id in `keyspace`'s messages table, read through the node at
    `contact_point` as the only coordinator, at `consistency`. At ONE while the other nodes
    are down, it is what that node holds; at QUORUM with one other node down, the read
    includes it and repairs what it lacks (read repair)."""
    host, port = contact_point.rsplit(":", 1)
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([host]),
        consistency_level=ConsistencyLevel.name_to_value[consistency],
        request_timeout=10.0,
    )
    cluster = Cluster(
        contact_points=[host], port=int(port),  # protocol negotiated
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connection_class=reactor.connection_class(),  # as cqs's: whole v5 segments
    )  # fmt: skip
    try:
        session = cluster.connect()
        rows = session.execute(
            f"SELECT message_id FROM {keyspace}.{schema.MESSAGES_TABLE} LIMIT 1000000"
        )
        return {str(row.message_id) for row in rows}
    finally:
        cluster.shutdown()


# --- what a server's driver says about a node, from the server's log ---------------------

_LOG_TIME_FORMAT = "%Y-%m-%d %H:%M:%S,%f"  # logging's asctime, as `cqs serve` logs it


def marked_down(address: str) -> str:
    return rf"Host {re.escape(address)}:\d+ has been marked down"


def marked_up(address: str) -> str:
    """Logged once the driver has opened its connection pools to the node again."""
    return rf"Connection pools established for node {re.escape(address)}:\d+"


def reconnect_failed(address: str) -> str:
    """Group 1: the delay (seconds) until the driver's next attempt."""
    return (
        rf"Error attempting to reconnect to {re.escape(address)}:\d+, "
        r"scheduling retry in ([0-9.]+) seconds"
    )


@dataclass(frozen=True)
class LoggedLine:
    at: float  # time.time() when the server logged it
    match: re.Match[str]


def log_mark(server: CqsProcess) -> int:
    """Where the server's log ends now: pass it to `wait_for_logged` as `since`."""
    try:
        return server.log_path.stat().st_size
    except OSError:
        return 0


def logged(server: CqsProcess, pattern: str, since: int = 0) -> list[LoggedLine]:
    """The server's log lines matching `pattern` after `since`, in order."""
    with server.log_path.open("rb") as log:
        log.seek(since)
        text = log.read().decode(errors="replace")
    lines = []
    for line in text.splitlines():
        found = re.search(pattern, line)
        if found is not None:
            stamp = datetime.strptime(line[:23], _LOG_TIME_FORMAT).timestamp()
            lines.append(LoggedLine(stamp, found))
    return lines


async def wait_for_logged(
    server: CqsProcess, pattern: str, since: int, seconds: float, count: int = 1
) -> list[LoggedLine]:
    """The first `count` lines matching `pattern` the server logs after `since`; fewer
    (maybe none) if `seconds` ran out first."""
    deadline = time.monotonic() + seconds
    while True:
        lines = await asyncio.to_thread(logged, server, pattern, since)
        if len(lines) >= count or time.monotonic() > deadline:
            return lines[:count]
        await asyncio.sleep(0.2)
