"""Fault-injection helpers for the resilience tests: services we may kill, and a ledger.

Owns, for the tests in this directory only:
- `FaultyRedis` / `FaultyCassandra`: a real redis-server / Cassandra JVM of the test's own
  that can be SIGKILLed, paused (SIGSTOP) and resumed, and restarted on the same port, so clients keep
  one address across faults. Cassandra restarts on its old data directory (nothing lost).
- `start_api`: `python -m cqs serve` child processes (the suite's `CqsProcess`) with this
  directory's Cassandra timeout and any extra flags (several may share one keyspace, Redis
  and Cassandra; `--workers N` makes one a supervisor).
- `Ledger` plus producer/consumer threads driving boto3: which sends were acknowledged,
  which ids were received how often, errors by code and latency per action.
- Fixtures: `fault_cassandra` (one per run and xdist worker, apart from the suite's shared
  node, so killing it hurts no other directory's tests; each test finds it running again),
  `fault_redis` (one per test), `start_api` (servers stopped after the test).

Imports the embedded launchers and the Redis cache adapter (to look at a queue's cache
state and at remembered deletes); never the service or the Cassandra adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from cqs.domain.model import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    CacheState,
    QueueIdentity,
    QueueNamespace,
)
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.redis_cache.cache import RedisMessageCache
from tests.fixtures.cassandra_node import cassandra_under_test
from tests.fixtures.cqs_server import CqsProcess
from tests.fixtures.untimed import outside_test_timeout

# Every fault test runs its servers with this Cassandra request timeout ...
CASSANDRA_TIMEOUT_SECONDS = 2.0
# ... and no SQS call may take longer than this, whatever is down.
CALL_BOUND_SECONDS = 2 * CASSANDRA_TIMEOUT_SECONDS + 2.0


# --- services we can hurt ------------------------------------------------------------------


class FaultyRedis:
    """A redis-server that keeps its port across SIGKILL + restart (it restarts empty)."""

    def __init__(self, work_dir: Path) -> None:
        self._work_dir = work_dir
        self._generation = 0
        self._server = EmbeddedRedis(work_dir / "redis-0")
        self._server.start()
        self.port = self._server.port

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._server.is_running

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self._server.kill()

    def pause(self) -> None:
        """SIGSTOP: connections stay open, nothing answers, the data is kept."""
        os.kill(self._server.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self._server.pid, signal.SIGCONT)

    def restart(self) -> None:
        """A fresh, empty redis-server on the same port."""
        self._server.kill()
        self._generation += 1
        self._server = EmbeddedRedis(self._work_dir / f"redis-{self._generation}", port=self.port)
        self._server.start()

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.resume()  # a paused server would not act on SIGTERM
        self._server.stop()


class FaultyCassandra:
    """A Cassandra node that can be paused, resumed, killed and restarted on its data."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._node = cassandra_under_test(data_dir)
        self._node.start()
        self.native_port = self._node.native_port
        self.paused = False

    @property
    def contact_point(self) -> str:
        return f"127.0.0.1:{self.native_port}"

    def _pid(self) -> int:
        pid = self._node.pid
        if pid is None:
            raise RuntimeError("Cassandra is not running")
        return pid

    def pause(self) -> None:
        """SIGSTOP the JVM: connections stay open, nothing answers."""
        os.kill(self._pid(), signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        os.kill(self._pid(), signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        if self.paused:
            self.resume()
        self._node.kill()

    def restart(self) -> None:
        """Start a new JVM on the same data directory and native port (commit log replays)."""
        self.kill()
        self._node = cassandra_under_test(self.data_dir, native_port=self.native_port)
        self._node.start()

    def ensure_running(self) -> None:
        if self.paused:
            self.resume()
        if not self._node.running:
            self.restart()

    def stop(self) -> None:
        if self.paused:
            self.resume()
        self._node.stop()


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            children.extend(int(p) for p in (task / "children").read_text().split())
    return children


def listening_socket_inodes(port: int) -> set[str]:
    """Inodes of the TCP sockets listening on 127.0.0.1/0.0.0.0/:: `port`."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] == "0A":  # 0A: LISTEN
                    inodes.add(fields[9])
    return inodes


def pids_listening_on(candidates: list[int], port: int) -> list[int]:
    """Those of `candidates` that hold a socket listening on `port` (the API workers)."""
    inodes = listening_socket_inodes(port)
    holders = []
    for pid in candidates:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:[") and target[8:-1] in inodes:
                        holders.append(pid)
                        break
    return holders


# --- clients -----------------------------------------------------------------------------


def sqs_client(endpoint: str) -> Any:
    """boto3 SQS client that does not retry (a 503 must be seen) and never waits forever."""
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(
            retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=60,
            max_pool_connections=4,
        ),
    )  # fmt: skip


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "ClientError"))
    return type(exc).__name__


# The account and region a default `cqs serve` puts queues in.
HOME = QueueNamespace(DEFAULT_ACCOUNT_ID, DEFAULT_REGION)


def cache_state(redis_url: str, queue_name: str) -> CacheState:
    async def read() -> CacheState:
        cache = RedisMessageCache([redis_url])
        try:
            return await cache.state(HOME.queue(queue_name))
        finally:
            await cache.close()

    return asyncio.run(read())


def remembered_store_deletes(redis_url: str) -> dict[QueueIdentity, list[str]]:
    """Deletes the API tier keeps in Redis until Cassandra takes them."""

    async def read() -> dict[QueueIdentity, list[str]]:
        cache = RedisMessageCache([redis_url])
        try:
            return await cache.deferred_store_deletes(10_000)
        finally:
            await cache.close()

    return asyncio.run(read())


def wait_until(condition: Callable[[], bool], seconds: float, pause: float = 0.2) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(pause)
    return condition()


# --- the ledger ----------------------------------------------------------------------------


@dataclass
class Call:
    action: str
    started: float  # time.monotonic()
    finished: float
    outcome: str  # "ok" or an error code

    @property
    def seconds(self) -> float:
        return self.finished - self.started


@dataclass
class Receipt:
    message_id: str
    body: str
    asked: float  # time.monotonic() when the receive was sent (before the server hid it)
    at: float  # time.monotonic() when the receive answered
    visibility: int  # the VisibilityTimeout asked for
    via: str  # the endpoint that handed it out


@dataclass
class Ledger:
    """Everything the clients saw, to check by message id afterwards."""

    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    acknowledged: dict[str, str] = field(default_factory=dict)  # message id -> body
    acknowledged_at: dict[str, float] = field(default_factory=dict)
    failed_bodies: set[str] = field(default_factory=set)  # sends that got an error
    receipts: list[Receipt] = field(default_factory=list)
    deleted: dict[str, float] = field(default_factory=dict)  # message id -> when deleted
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    def next_body(self) -> str:
        with self.lock:
            return f"{self.run}-{next(self._numbers)}"

    def timed(self, action: str, call: Callable[[], Any]) -> Any:
        """Run one SQS call, record its duration and outcome, re-raise its error."""
        started = time.monotonic()
        try:
            result = call()
        except (ClientError, BotoCoreError, OSError) as exc:
            with self.lock:
                self.calls.append(Call(action, started, time.monotonic(), error_code(exc)))
            raise
        with self.lock:
            self.calls.append(Call(action, started, time.monotonic(), "ok"))
        return result

    def send(self, sqs: Any, url: str) -> str | None:
        body = self.next_body()
        try:
            reply = self.timed("SendMessage", lambda: sqs.send_message(QueueUrl=url, MessageBody=body))
        except (ClientError, BotoCoreError, OSError):
            with self.lock:
                self.failed_bodies.add(body)
            return None
        with self.lock:
            self.acknowledged[reply["MessageId"]] = body
            self.acknowledged_at[reply["MessageId"]] = time.monotonic()
        return str(reply["MessageId"])

    def receive(
        self, sqs: Any, url: str, *, visibility: int, wait: int = 1, count: int = 10,
        via: str = "",
    ) -> list[dict[str, Any]]:
        asked = time.monotonic()
        try:
            reply = self.timed(
                "ReceiveMessage",
                lambda: sqs.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=count, WaitTimeSeconds=wait,
                    VisibilityTimeout=visibility,
                ),
            )
        except (ClientError, BotoCoreError, OSError):
            return []
        messages: list[dict[str, Any]] = reply.get("Messages", [])
        now = time.monotonic()
        with self.lock:
            for message in messages:
                self.receipts.append(
                    Receipt(message["MessageId"], message["Body"], asked, now, visibility, via)
                )
        return messages

    def delete(self, sqs: Any, url: str, message: dict[str, Any]) -> bool:
        try:
            self.timed(
                "DeleteMessage",
                lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"]),
            )
        except (ClientError, BotoCoreError, OSError):
            return False
        with self.lock:
            self.deleted[message["MessageId"]] = time.monotonic()
        return True

    # --- verdicts ---------------------------------------------------------------------------

    def receive_counts(self) -> Counter[str]:
        with self.lock:
            return Counter(r.message_id for r in self.receipts)

    def acknowledged_ids(self) -> list[str]:
        """A snapshot: senders may still be adding while a verdict is taken."""
        with self.lock:
            return list(self.acknowledged)

    def lost(self) -> list[str]:
        """Acknowledged sends never received: must be empty."""
        counts = self.receive_counts()
        return sorted(i for i in self.acknowledged_ids() if counts[i] == 0)

    def duplicates(self) -> dict[str, int]:
        """Acknowledged ids received more than once -> extra deliveries."""
        counts = self.receive_counts()
        return {i: counts[i] - 1 for i in self.acknowledged_ids() if counts[i] > 1}

    def unexpected(self) -> list[Receipt]:
        """Received ids nobody was told were sent; only failed sends may explain them."""
        with self.lock:
            return [
                r for r in self.receipts
                if r.message_id not in self.acknowledged and r.body not in self.failed_bodies
            ]

    def stored_despite_error(self) -> list[str]:
        """Sends that got an error yet were delivered (an ambiguous timeout; not a loss)."""
        with self.lock:
            return sorted({
                r.body for r in self.receipts
                if r.message_id not in self.acknowledged and r.body in self.failed_bodies
            })

    def resurrected(self) -> list[str]:
        """Ids handed out again by a receive asked after their delete was acknowledged."""
        with self.lock:
            return sorted({
                r.message_id for r in self.receipts
                if r.message_id in self.deleted and r.asked > self.deleted[r.message_id]
            })

    def early_redeliveries(
        self, slack: float = 0.25, same_endpoint: bool = False
    ) -> list[tuple[str, float]]:
        """(id, seconds early) for receipts answered before the previous receipt's
        visibility timeout could have run out (measured from when that receive was asked);
        with `same_endpoint`, only those handed out again by the same server."""
        early: list[tuple[str, float]] = []
        with self.lock:
            by_id: dict[str, list[Receipt]] = defaultdict(list)
            for receipt in self.receipts:
                by_id[receipt.message_id].append(receipt)
        for message_id, receipts in by_id.items():
            receipts.sort(key=lambda r: r.at)
            for previous, current in itertools.pairwise(receipts):
                if same_endpoint and previous.via != current.via:
                    continue
                due = previous.asked + previous.visibility
                if current.at < due - slack:
                    early.append((message_id, round(due - current.at, 2)))
        return early

    def receipts_of(self, message_id: str) -> list[Receipt]:
        """The receipts of one id, in the order they were answered (for failure reports)."""
        with self.lock:
            return sorted((r for r in self.receipts if r.message_id == message_id),
                          key=lambda r: r.at)

    def errors(self) -> Counter[str]:
        with self.lock:
            return Counter(f"{c.action}:{c.outcome}" for c in self.calls if c.outcome != "ok")

    def slowest(self) -> Call | None:
        with self.lock:
            return max(self.calls, key=lambda c: c.seconds, default=None)

    def summary(self) -> str:
        duplicates = self.duplicates()
        slowest = self.slowest()
        return (
            f"run {self.run}: acknowledged {len(self.acknowledged)}, failed sends "
            f"{len(self.failed_bodies)}, receipts {len(self.receipts)}, lost {len(self.lost())}, "
            f"duplicates {sum(duplicates.values())} over {len(duplicates)} ids, "
            f"stored despite error {len(self.stored_despite_error())}, errors "
            f"{dict(self.errors())}, slowest call "
            f"{(slowest.action, round(slowest.seconds, 2)) if slowest else None}"
        )


class Workload:
    """Producer and consumer threads over boto3 until `stop()`; each its own client.

    `targets` are (endpoint, queue URL) pairs; threads are spread over them round robin.
    """

    def __init__(
        self,
        ledger: Ledger,
        targets: list[tuple[str, str]],
        *,
        producers: int,
        consumers: int,
        visibility: int = 5,
        send_pause: float = 0.02,
    ) -> None:
        self.ledger = ledger
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads: list[threading.Thread] = []
        self._visibility = visibility
        self._send_pause = send_pause
        for index in range(producers):
            target = targets[index % len(targets)]
            self._threads.append(threading.Thread(target=self._produce, args=target, daemon=True))
        for index in range(consumers):
            target = targets[index % len(targets)]
            self._threads.append(threading.Thread(target=self._consume, args=target, daemon=True))
        self.in_flight: set[str] = set()  # received, delete not answered yet

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def _produce(self, endpoint: str, url: str) -> None:
        sqs = sqs_client(endpoint)
        while not self._stop_producing.is_set():
            self.ledger.send(sqs, url)
            time.sleep(self._send_pause)

    def _consume(self, endpoint: str, url: str) -> None:
        sqs = sqs_client(endpoint)
        while not self._stop_consuming.is_set():
            messages = self.ledger.receive(sqs, url, visibility=self._visibility, via=endpoint)
            with self.ledger.lock:
                self.in_flight.update(m["MessageId"] for m in messages)
            for message in messages:
                self.ledger.delete(sqs, url, message)
                with self.ledger.lock:
                    self.in_flight.discard(message["MessageId"])

    def stop_producing(self) -> None:
        self._stop_producing.set()

    def drain(self, seconds: float) -> bool:
        """Stop producing, consume until every acknowledged id was received (or time is up)."""
        self.stop_producing()
        done = wait_until(lambda: not self.ledger.lost(), seconds, pause=0.5)
        # A little longer, so that redeliveries of what was just deleted would show up too.
        time.sleep(2.0)
        self.stop()
        return done

    def stop(self) -> None:
        self._stop_producing.set()
        self._stop_consuming.set()
        for thread in self._threads:
            thread.join(timeout=90)


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fault_cassandra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultyCassandra]:
    """A Cassandra node of these tests' own: they may pause, kill and restart it (a 5.0
    node takes 20-50 s to start on a loaded 2-core machine, so one serves every module)."""
    with outside_test_timeout():  # bounded by the launcher's own start timeout
        node = FaultyCassandra(tmp_path_factory.mktemp("fault-cassandra"))
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture
def cassandra(fault_cassandra: FaultyCassandra) -> FaultyCassandra:
    """The fault node, running and answering when the test begins (a restart after an
    earlier test's kill is not charged to this test's timeout)."""
    with outside_test_timeout():
        fault_cassandra.ensure_running()
    return fault_cassandra


@pytest.fixture
def fault_redis(tmp_path: Path) -> Iterator[FaultyRedis]:
    redis = FaultyRedis(tmp_path / "redis")
    try:
        yield redis
    finally:
        redis.stop()


StartApi = Callable[..., CqsProcess]


@pytest.fixture
def start_api(
    cassandra: FaultyCassandra, fault_redis: FaultyRedis, tmp_path: Path
) -> Iterator[StartApi]:
    """Start `cqs serve` processes over this test's Redis and the module's Cassandra.

    All servers of one test share one keyspace unless told otherwise; extra flags pass
    through. Their logs' tails are printed when the test ends (shown if it failed).
    """
    keyspace = "fault_" + uuid.uuid4().hex[:12]
    started: list[CqsProcess] = []
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)

    def start(*extra_args: str, keyspace_name: str | None = None) -> CqsProcess:
        server = CqsProcess(
            [fault_redis.url], cassandra.contact_point, logs, keyspace_name or keyspace,
            ["--cassandra-timeout-seconds", str(CASSANDRA_TIMEOUT_SECONDS), *extra_args],
        )
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        with contextlib.suppress(Exception):
            server.stop()
    for server in started:
        print(f"--- log of cqs on port {server.port} ---\n{server.log_tail(3000)}")


def wait_for_threads(threads: list[threading.Thread], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def group_by_endpoint(receipts: list[Receipt]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for receipt in receipts:
        grouped[receipt.via].append(receipt.message_id)
    return grouped
