"""Bounded soak under faults: nothing acknowledged may be lost.

Starts one embedded Redis, one embedded Cassandra and two `cqs serve` processes sharing them
(one keyspace), runs P producer and C consumer threads (each its own boto3 client, no
retries) over two queues through both processes for `--minutes`, and meanwhile injects a
fixed fault schedule:

- Redis SIGKILL, restarted empty 5 s later (queues go Return-From-Cassandra, then refill);
- Cassandra JVM SIGSTOP for 8 s, then SIGCONT (sends answer 503, cached messages flow);
- one API process SIGKILL, restarted on the same port 3 s later (its clients see
  connection errors; what it had handed out comes back after the visibility timeout).

Then producers stop and consumers drain. Every body is `<run>-<n>`, so each acknowledged
message id is checked: received at least once (lost must be 0), how many extra deliveries
(duplicates), errors by code, latency percentiles per action. `--write-docs` puts the
report, with machine and command, between the soak markers of docs/reliability.md.

`--cluster` runs it on a three-node Cassandra cluster (127.0.0.2-4, replication factor 3,
QUORUM reads and writes, contact points all three nodes) and replaces the Cassandra freeze
with node crashes: at 30 % and 70 % one node (a different one each time) is SIGKILLed,
left down until both others have convicted it plus `--node-down-seconds`, then restarted
on its data; the report says when the others saw it dead and up again and whether they
handed it their hints. `--write-docs` then writes the cluster section.

`--fifo` runs the same on two FIFO queues: each producer sends to message groups of its own
(MessageDeduplicationId = body), and the report also counts order violations: a message
delivered for the first time before a message of its group that was sent earlier.

    python benchmarks/soak.py --minutes 3 --write-docs
    python benchmarks/soak.py --minutes 3 --fifo --write-docs
    python benchmarks/soak.py --minutes 10 --cluster --write-docs

Imports the embedded launchers and the Redis key layout (to watch a queue's cache state);
never the service or the adapters.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from redis import Redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.report import machine_summary, write_section  # noqa: E402
from benchmarks.harness.servers import cassandra_summary, shipped_cassandra  # noqa: E402
from cqs.domain.model import DEFAULT_ACCOUNT_ID, DEFAULT_REGION, QueueNamespace  # noqa: E402
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster  # noqa: E402
from cqs.embedded.ports import free_port  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402
from cqs.redis_cache.keys import QueueKeys  # noqa: E402

HOME = QueueNamespace(DEFAULT_ACCOUNT_ID, DEFAULT_REGION)

DOC = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- soak:begin -->"
END = "<!-- soak:end -->"
FIFO_BEGIN = "<!-- soak-fifo:begin -->"
FIFO_END = "<!-- soak-fifo:end -->"
CLUSTER_BEGIN = "<!-- soak-cluster:begin -->"
CLUSTER_END = "<!-- soak-cluster:end -->"
CLUSTER_ARGS = [
    "--cassandra-replication", "{'class': 'SimpleStrategy', 'replication_factor': 3}",
    "--cassandra-read-consistency", "QUORUM", "--cassandra-write-consistency", "QUORUM",
]  # fmt: skip
CASSANDRA_TIMEOUT_SECONDS = 2.0
VISIBILITY_SECONDS = 10
REDIS_DOWN_SECONDS = 5.0
CASSANDRA_PAUSE_SECONDS = 8.0
API_DOWN_SECONDS = 3.0


# --- processes ------------------------------------------------------------------------------


def answers(endpoint: str) -> bool:
    request = urllib.request.Request(
        endpoint + "/",
        data=json.dumps({}).encode(),
        headers={
            "X-Amz-Target": "AmazonSQS.ListQueues",
            "Content-Type": "application/x-amz-json-1.0",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


class ApiProcess:
    """One `cqs serve` child on a fixed port; can be SIGKILLed and started again."""

    def __init__(
        self, redis_url: str, cassandra: str, keyspace: str, work: Path, extra: list[str]
    ) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = work / f"cqs-{self.port}.log"
        self.args = [
            sys.executable, "-m", "cqs", "serve",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--redis-urls", redis_url, "--cassandra-hosts", cassandra,
            "--cassandra-keyspace", keyspace,
            "--cassandra-timeout-seconds", str(CASSANDRA_TIMEOUT_SECONDS),
            "--receipt-secret", "soak", "--data-dir", str(work / "data"),
            "--log-level", "WARNING", *extra,
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start and return how long it took to answer."""
        began = time.monotonic()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                stdin=subprocess.DEVNULL,
            )
        while time.monotonic() - began < 60:
            if self.process.poll() is not None:
                break
            if answers(self.endpoint):
                return time.monotonic() - began
            time.sleep(0.1)
        raise RuntimeError(f"cqs serve did not start; see {self.log_path}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --- what the clients saw -------------------------------------------------------------------


def sqs_client(endpoint: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(
            retries={"total_max_attempts": 1}, connect_timeout=3, read_timeout=30,
            max_pool_connections=2,
        ),
    )  # fmt: skip


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "ClientError"))
    return type(exc).__name__


@dataclass
class Receipt:
    message_id: str
    body: str
    asked: float
    at: float
    visibility: int
    position: int = 0  # within its ReceiveMessage answer


@dataclass
class Ledger:
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    acknowledged: dict[str, str] = field(default_factory=dict)
    acknowledged_at: list[float] = field(default_factory=list)
    failed_bodies: set[str] = field(default_factory=set)
    send_order: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # FIFO
    receipts: list[Receipt] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    error_times: list[tuple[float, str, str]] = field(default_factory=list)
    slow_calls: list[tuple[float, float, str]] = field(default_factory=list)  # top 5
    lock: threading.Lock = field(default_factory=threading.Lock)
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    def timed(self, action: str, call: Callable[[], Any]) -> Any:
        started = time.monotonic()
        try:
            result = call()
        except (ClientError, BotoCoreError, OSError) as exc:
            code = error_code(exc)
            with self.lock:
                self.errors[(action, code)] += 1
                self.error_times.append((started, action, code))
            raise
        with self.lock:
            self.latencies[action].append(time.monotonic() - started)
            self.slow_calls.append((time.monotonic() - started, started, action))
            self.slow_calls.sort(reverse=True)
            del self.slow_calls[5:]
        return result

    def send(self, sqs: Any, url: str, group: str | None = None) -> None:
        """One SendMessage; on a FIFO queue to `group`, deduplicated by its body."""
        with self.lock:
            body = f"{self.run}-{next(self._numbers)}"
            fifo = {} if group is None else {"MessageGroupId": group, "MessageDeduplicationId": body}
            if group is not None:
                self.send_order[group].append(body)
        try:
            reply = self.timed(
                "SendMessage", lambda: sqs.send_message(QueueUrl=url, MessageBody=body, **fifo)
            )
        except (ClientError, BotoCoreError, OSError):
            with self.lock:
                self.failed_bodies.add(body)
            return
        with self.lock:
            self.acknowledged[reply["MessageId"]] = body
            self.acknowledged_at.append(time.monotonic())

    def receive_and_delete(self, sqs: Any, url: str) -> int:
        asked = time.monotonic()
        try:
            reply = self.timed(
                "ReceiveMessage",
                lambda: sqs.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                    VisibilityTimeout=VISIBILITY_SECONDS,
                ),
            )
        except (ClientError, BotoCoreError, OSError):
            time.sleep(0.2)
            return 0
        messages = reply.get("Messages", [])
        now = time.monotonic()
        with self.lock:
            self.receipts.extend(
                Receipt(m["MessageId"], m["Body"], asked, now, VISIBILITY_SECONDS, position)
                for position, m in enumerate(messages)
            )
        for message in messages:
            handle = message["ReceiptHandle"]
            with contextlib.suppress(ClientError, BotoCoreError, OSError):
                self.timed(
                    "DeleteMessage",
                    lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle=handle),  # noqa: B023
                )
        return len(messages)

    def counts(self) -> Counter[str]:
        with self.lock:
            return Counter(r.message_id for r in self.receipts)

    def lost(self) -> list[str]:
        counts = self.counts()
        with self.lock:
            return [i for i in self.acknowledged if counts[i] == 0]

    def order_violations(self) -> int:
        """FIFO: messages first delivered before a message of their group sent earlier."""
        first: dict[str, tuple[float, int]] = {}
        with self.lock:
            for receipt in self.receipts:
                key = (receipt.at, receipt.position)
                first[receipt.body] = min(first.get(receipt.body, key), key)
            orders = [list(bodies) for bodies in self.send_order.values()]
        violations = 0
        for bodies in orders:
            latest = (0.0, 0)
            for body in bodies:
                if body not in first:
                    continue  # a refused send that was never stored
                if first[body] < latest:
                    violations += 1
                latest = max(latest, first[body])
        return violations

    def early_redeliveries(self) -> list[float]:
        """When (monotonic) each delivery was answered that came before the previous
        delivery's visibility timeout of the same message ran out."""
        by_id: dict[str, list[Receipt]] = defaultdict(list)
        with self.lock:
            for receipt in self.receipts:
                by_id[receipt.message_id].append(receipt)
        early: list[float] = []
        for receipts in by_id.values():
            receipts.sort(key=lambda r: r.at)
            for previous, current in itertools.pairwise(receipts):
                if current.at < previous.asked + previous.visibility - 0.25:
                    early.append(current.at)
        return early


# --- the run ---------------------------------------------------------------------------------


@dataclass
class FaultRecord:
    at: float  # seconds from the start of the load
    fault: str
    recovery: str = ""
    until: float = 0.0  # seconds from the start of the load when recovery was seen


class Soak:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.ledger = Ledger()
        self.faults: list[FaultRecord] = []
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()
        self.redis = EmbeddedRedis(work / "redis-0")
        self.cassandra = shipped_cassandra(work / "cassandra")
        self.cluster = EmbeddedCassandraCluster(work / "cluster") if args.cluster else None
        self.cluster_rss: list[float] = []
        self.servers: list[ApiProcess] = []
        self.queues: list[str] = []
        self.t0 = 0.0

    def since_start(self) -> float:
        return time.monotonic() - self.t0

    def start_services(self) -> None:
        self.redis.start()
        if self.cluster is not None:
            self.cluster.start()
            self.cluster_rss = [size / 2**20 for size in self.cluster.resident_bytes()]
            print(f"cluster ring formed in {self.cluster.start_seconds:.1f} s; RSS per JVM "
                  f"{', '.join(f'{m:.0f}' for m in self.cluster_rss)} MiB")
            hosts, extra = ",".join(self.cluster.contact_points), CLUSTER_ARGS
        else:
            self.cassandra.start()
            hosts, extra = self.cassandra.contact_point, []
        keyspace = "soak_" + uuid.uuid4().hex[:10]
        for _ in range(2):
            server = ApiProcess(self.redis.url, hosts, keyspace, self.work, extra)
            server.start()
            self.servers.append(server)
        admin = sqs_client(self.servers[0].endpoint)
        for index in range(2):
            name = f"soak-{self.ledger.run}-{index}" + (".fifo" if self.args.fifo else "")
            attributes = {"FifoQueue": "true"} if self.args.fifo else {}
            admin.create_queue(QueueName=name, Attributes=attributes)
            self.queues.append(name)

    def stop_services(self) -> None:
        for server in self.servers:
            server.stop()
        self.redis.stop()
        if self.cluster is not None:
            self.cluster.stop()
            return
        with contextlib.suppress(ProcessLookupError, TypeError):
            os.kill(self.cassandra.pid, signal.SIGCONT)  # type: ignore[arg-type]
        self.cassandra.stop()

    def queue_url(self, endpoint: str, name: str) -> str:
        return f"{endpoint}/000000000000/{name}"

    def targets(self, count: int) -> list[tuple[str, str]]:
        pairs = [(s.endpoint, q) for s in self.servers for q in self.queues]
        return [pairs[i % len(pairs)] for i in range(count)]

    def produce(self, endpoint: str, queue: str, producer: int) -> None:
        sqs = sqs_client(endpoint)
        url = self.queue_url(endpoint, queue)
        groups = itertools.cycle([f"p{producer}-g{k}" for k in range(self.args.groups)])
        while not self.stop_producing.is_set():
            self.ledger.send(sqs, url, next(groups) if self.args.fifo else None)
            time.sleep(self.args.send_pause)

    def consume(self, endpoint: str, queue: str) -> None:
        sqs = sqs_client(endpoint)
        url = self.queue_url(endpoint, queue)
        while not self.stop_consuming.is_set():
            self.ledger.receive_and_delete(sqs, url)

    # --- faults ------------------------------------------------------------------------------

    def kill_redis(self) -> None:
        record = FaultRecord(self.since_start(), f"Redis SIGKILL, restarted empty {REDIS_DOWN_SECONDS:g} s later")
        self.faults.append(record)
        port = self.redis.port
        self.redis.kill()
        time.sleep(REDIS_DOWN_SECONDS)
        self.redis = EmbeddedRedis(self.work / f"redis-{len(self.faults)}", port=port)
        self.redis.start()
        restarted = time.monotonic()
        client = Redis.from_url(self.redis.url, decode_responses=True)
        try:
            pending = set(self.queues)
            while pending and time.monotonic() - restarted < 60:
                pending = {q for q in pending if client.get(QueueKeys(HOME.queue(q)).state) != "ready"}
                time.sleep(0.05)
        finally:
            client.close()
        record.recovery = (
            f"both queues' caches READY {time.monotonic() - restarted:.1f} s after the restart"
            if not pending else "caches not READY within 60 s"
        )
        record.until = self.since_start()

    def pause_cassandra(self) -> None:
        record = FaultRecord(self.since_start(), f"Cassandra SIGSTOP for {CASSANDRA_PAUSE_SECONDS:g} s, then SIGCONT")
        self.faults.append(record)
        pid = self.cassandra.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        time.sleep(CASSANDRA_PAUSE_SECONDS)
        os.kill(pid, signal.SIGCONT)
        resumed = time.monotonic()
        while time.monotonic() - resumed < 60:
            with self.ledger.lock:
                if self.ledger.acknowledged_at and self.ledger.acknowledged_at[-1] > resumed:
                    break
            time.sleep(0.05)
        record.recovery = f"sends acknowledged again {time.monotonic() - resumed:.1f} s after SIGCONT"
        record.until = self.since_start()

    def kill_api_process(self) -> None:
        victim = self.servers[1]
        record = FaultRecord(self.since_start(), f"API process SIGKILL, restarted {API_DOWN_SECONDS:g} s later")
        self.faults.append(record)
        victim.kill()
        time.sleep(API_DOWN_SECONDS)
        took = victim.start()
        record.recovery = f"answering again {took:.1f} s after the restart began"
        record.until = self.since_start()

    def kill_cassandra_node(self, victim: int) -> None:
        """SIGKILL one node of the cluster; restart it once both others convicted it and
        `--node-down-seconds` more passed."""
        cluster = self.cluster
        assert cluster is not None
        others = [i for i in range(len(cluster.nodes)) if i != victim]
        address = cluster.addresses[victim]
        record = FaultRecord(
            self.since_start(), f"Cassandra node {address} SIGKILL, restarted "
            f"{self.args.node_down_seconds:g} s after both others saw it dead",
        )  # fmt: skip
        self.faults.append(record)
        marks = {i: cluster.log_mark(i) for i in others}
        killed = time.monotonic()
        cluster.kill(victim)
        for other in others:
            cluster.wait_for_state(other, victim, "dead", marks[other], 120)
        convicted = time.monotonic() - killed
        time.sleep(self.args.node_down_seconds)
        marks = {i: cluster.log_mark(i) for i in others}
        restarting = time.monotonic()
        cluster.restart(victim)  # returns once both others see it up
        back = time.monotonic() - restarting
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
            cluster.saw_hints_delivered(i, victim, marks[i]) for i in others
        ):
            time.sleep(0.5)
        handed = sum(cluster.saw_hints_delivered(i, victim, marks[i]) for i in others)
        record.recovery = (
            f"seen dead by both others {convicted:.1f} s after the kill; up again {back:.1f} s "
            f"after the restart began; {handed} of {len(others)} others logged handing "
            "over their hints"
        )
        record.until = self.since_start()

    def schedule(self, seconds: float) -> None:
        plan: list[tuple[float, Callable[[], None]]] = [
            (0.15, self.kill_redis),
            (0.40, self.pause_cassandra),
            (0.65, self.kill_api_process),
        ]
        if self.cluster is not None:
            plan = [
                (0.15, self.kill_redis),
                (0.30, lambda: self.kill_cassandra_node(2)),
                (0.50, self.kill_api_process),
                (0.70, lambda: self.kill_cassandra_node(1)),
            ]
        for fraction, fault in plan:
            delay = fraction * seconds - self.since_start()
            if delay > 0:
                time.sleep(delay)
            fault()
        remaining = seconds - self.since_start()
        if remaining > 0:
            time.sleep(remaining)

    # --- main ---------------------------------------------------------------------------------

    def run(self) -> bool:
        seconds = self.args.minutes * 60
        producers = [
            threading.Thread(target=self.produce, args=(*t, index), daemon=True)
            for index, t in enumerate(self.targets(self.args.producers))
        ]
        consumers = [
            threading.Thread(target=self.consume, args=t, daemon=True)
            for t in self.targets(self.args.consumers)
        ]
        self.t0 = time.monotonic()
        for thread in producers + consumers:
            thread.start()
        self.schedule(seconds)
        self.stop_producing.set()
        for thread in producers:
            thread.join(60)
        self.load_seconds = self.since_start()
        drain_began = time.monotonic()
        while self.ledger.lost() and time.monotonic() - drain_began < self.args.drain_seconds:
            time.sleep(0.5)
        # Let redeliveries of anything still in flight show up before counting.
        time.sleep(VISIBILITY_SECONDS + 2)
        self.drain_seconds = time.monotonic() - drain_began
        self.stop_consuming.set()
        for thread in consumers:
            thread.join(60)
        self.left_in_queues = 0
        admin = sqs_client(self.servers[0].endpoint)
        for queue in self.queues:
            attributes = admin.get_queue_attributes(
                QueueUrl=self.queue_url(self.servers[0].endpoint, queue), AttributeNames=["All"]
            )["Attributes"]
            self.left_in_queues += int(attributes["ApproximateNumberOfMessages"])
            self.left_in_queues += int(attributes["ApproximateNumberOfMessagesNotVisible"])
        return not self.ledger.lost()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def in_window(times: list[float], fault: FaultRecord) -> int:
    return sum(1 for t in times if fault.at <= t <= fault.until + 2.0)




def report(soak: Soak, command: str) -> str:
    ledger = soak.ledger
    counts = ledger.counts()
    acknowledged = set(ledger.acknowledged)
    delivered = sum(counts[i] for i in acknowledged)
    duplicates = sum(counts[i] - 1 for i in acknowledged if counts[i] > 1)
    lost = ledger.lost()
    early = [t - soak.t0 for t in ledger.early_redeliveries()]
    error_times = [t - soak.t0 for t, _, _ in ledger.error_times]
    stored_despite_error = len({
        r.body for r in ledger.receipts
        if r.message_id not in acknowledged and r.body in ledger.failed_bodies
    })
    unexplained = sum(
        1 for r in ledger.receipts
        if r.message_id not in acknowledged and r.body not in ledger.failed_bodies
    )
    cassandra = f"one embedded {cassandra_summary(soak.cassandra)}"
    if soak.cluster is not None:
        cassandra = (
            "a three-node embedded Cassandra cluster on 127.0.0.2-4 (replication factor 3, "
            "QUORUM reads and writes; the ring formed in "
            f"{soak.cluster.start_seconds:.1f} s, RSS per JVM "
            f"{', '.join(f'{m:.0f}' for m in soak.cluster_rss)} MiB at the start)"
        )
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {machine_summary()}; two `cqs serve` processes "
        f"(Cassandra timeout {CASSANDRA_TIMEOUT_SECONDS:g} s) sharing one embedded Redis and "
        f"{cassandra}, {soak.args.producers} producer and {soak.args.consumers} "
        "consumer threads (boto3, JSON protocol, no retries) spread over 2 "
        + (f"FIFO queues ({soak.args.groups} message groups per producer) " if soak.args.fifo
           else "queues ")
        + f"and both processes, VisibilityTimeout {VISIBILITY_SECONDS} s, everything on the "
        f"same machine. Command: `{command}`.",
        "",
        f"Load ran {soak.load_seconds:.0f} s, then the drain {soak.drain_seconds:.0f} s "
        f"(including {VISIBILITY_SECONDS + 2} s of waiting for late redeliveries).",
        "",
        "Per fault, the window runs from the fault to 2 s after recovery was seen:",
        "",
        "| at s | fault | recovery | errors in the window | early duplicates in the window |",
        "| --- | --- | --- | --- | --- |",
        *[
            f"| {f.at:.0f} | {f.fault} | {f.recovery} | "
            f"{in_window(error_times, f)} | {in_window(early, f)} |"
            for f in soak.faults
        ],
        "",
        "| sent (acknowledged) | sends refused | received (distinct ids) | deliveries | "
        "duplicates (extra deliveries) | of which before the visibility timeout | **lost** | "
        "delivered although the send failed | unexplained ids | left in queues |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {len(acknowledged)} | {len(ledger.failed_bodies)} | "
        f"{sum(1 for i in acknowledged if counts[i])} | {delivered} | {duplicates} | "
        f"{len(early)} | **{len(lost)}** | {stored_despite_error} | "
        f"{unexplained} | {soak.left_in_queues} |",
        "",
        "| call | error | count |",
        "| --- | --- | --- |",
        *[f"| {a} | {c} | {n} |" for (a, c), n in sorted(ledger.errors.items())],
        "",
        "| action | successful calls | p50 ms | p95 ms | p99 ms | max ms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for action in ("SendMessage", "ReceiveMessage", "DeleteMessage"):
        values = ledger.latencies.get(action, [])
        lines.append(
            f"| {action} | {len(values)} | {percentile(values, 0.5) * 1000:.1f} | "
            f"{percentile(values, 0.95) * 1000:.1f} | {percentile(values, 0.99) * 1000:.1f} | "
            f"{max(values, default=0.0) * 1000:.0f} |"
        )
    lines += ["", "ReceiveMessage uses WaitTimeSeconds=1, so an empty receive takes about 1 s."]
    if soak.args.fifo:
        lines += [
            "",
            f"**Order violations within message groups: {ledger.order_violations()}** "
            f"(over {len(ledger.send_order)} groups; a message first delivered before one of "
            "its group sent earlier).",
        ]
    return "\n".join(lines)


def diagnostics(soak: Soak) -> str:
    """Details for stdout (not the docs): the slowest calls and any unexplained receipt."""
    ledger = soak.ledger
    by_body: dict[str, list[str]] = defaultdict(list)
    for message_id, body in ledger.acknowledged.items():
        by_body[body].append(message_id)
    lines = ["slowest successful calls (seconds, started at s, action):"]
    lines += [f"  {d:.2f} {t - soak.t0:.1f} {a}" for d, t, a in ledger.slow_calls]
    for r in ledger.receipts:
        if r.message_id not in ledger.acknowledged:
            lines.append(
                f"unacknowledged id received: {r.message_id} body {r.body} at "
                f"{r.at - soak.t0:.1f} s; send failed: {r.body in ledger.failed_bodies}; "
                f"body acknowledged as {by_body.get(r.body)}"
            )
    return "\n".join(lines)




def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="load duration")
    parser.add_argument("--producers", type=int, default=3)
    parser.add_argument("--consumers", type=int, default=3)
    parser.add_argument("--send-pause", type=float, default=0.02,
                        help="seconds each producer sleeps between sends")
    parser.add_argument("--drain-seconds", type=float, default=180.0)
    parser.add_argument("--fifo", action="store_true", help="two FIFO queues instead")
    parser.add_argument("--groups", type=int, default=4,
                        help="with --fifo: message groups per producer")
    parser.add_argument("--cluster", action="store_true",
                        help="a three-node Cassandra cluster, whose nodes get killed")
    parser.add_argument("--node-down-seconds", type=float, default=20.0,
                        help="with --cluster: how long a killed node stays down after both "
                        "others convicted it")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = " ".join(["python benchmarks/soak.py", f"--minutes {args.minutes:g}",
                        f"--producers {args.producers}", f"--consumers {args.consumers}",
                        *([f"--fifo --groups {args.groups}"] if args.fifo else []),
                        *(["--cluster"] if args.cluster else [])])
    work = Path(tempfile.mkdtemp(prefix="cqs-soak-"))
    soak = Soak(args, work)
    try:
        soak.start_services()
        complete = soak.run()
    finally:
        soak.stop_services()
    text = report(soak, command)
    print(text)
    print(diagnostics(soak))
    if args.keep:
        print(f"work directory with logs: {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    if args.write_docs:
        begin, end = (
            (CLUSTER_BEGIN, CLUSTER_END) if args.cluster
            else (FIFO_BEGIN, FIFO_END) if args.fifo else (BEGIN, END)
        )
        write_section(DOC, begin, end, f"{begin}\n{text}\n{end}", "Reliability")
    ordered = not args.fifo or soak.ledger.order_violations() == 0
    return 0 if complete and ordered else 1


if __name__ == "__main__":
    sys.exit(main())
