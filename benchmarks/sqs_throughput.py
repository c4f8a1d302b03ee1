"""Throughput and latency of cqs through unmodified boto3 clients, every message id checked.

Scenarios: send (SendMessage), send-batch (SendMessageBatch of 10), receive+delete
(ReceiveMessage of up to 10 then DeleteMessageBatch, draining what send-batch left; each
client stops at its first empty receive), mixed (producers and consumers at once; with
`--messages` the consumers stop once the producers' messages are through), and the
batch send and receive+delete on a FIFO queue (100 message groups, a unique deduplication
id per message). Each runs for a fixed time (`--seconds`; a send also stops once its
clients have sent `--messages`, when given) with N client processes, each with its own
boto3 client. `--scenarios` picks some of send, batch, mixed, fifo.

Every message is checked (issue 13): each body is unique, and each client process records
in a DeliveryLedger (benchmarks/harness/delivery_ledger.py) every acknowledged send, every delivery
(message id, body, when its ReceiveMessage was sent and answered, the VisibilityTimeout it
asked for) and every delete outcome. After the last scenario on a queue the queue is drained
(receive + DeleteMessageBatch by the same clients, not timed) until every acknowledged
message was received or `--drain-seconds` passed; the queue's ledger then gives its verdict:
sent (acknowledged), distinct received, lost, expected duplicates, early duplicates (before
the visibility timeout) and deliveries after delete. The rows on one queue share its
verdict. A row whose queue lost a message or delivered one unexpectedly is not a result:
its throughput is struck out and marked in the table, stdout and stderr say so, and the
script exits 1.

By default it starts its own embedded Redis, embedded Cassandra and one `cqs serve` process;
`--endpoint` measures a running server instead. Results go to stdout and, with
`--write-docs`, replace the generated section of docs/performance.md.

    python benchmarks/sqs_throughput.py --seconds 20 --clients 8 --write-docs
    python benchmarks/sqs_throughput.py --seconds 5 --clients 2 --messages 500 --scenarios send
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.delivery_ledger import (  # noqa: E402
    Acknowledged,
    DeleteOutcome,
    Delivery,
    DeliveryLedger,
    Verdict,
)
from benchmarks.harness.report import machine_summary, write_section  # noqa: E402
from benchmarks.harness.servers import start_server  # noqa: E402

DOC = ROOT / "docs" / "performance.md"
BEGIN = "<!-- sqs_throughput:begin -->"
END = "<!-- sqs_throughput:end -->"
GROUPS = ("send", "batch", "mixed", "fifo")  # what --scenarios picks from
BODY_SIZE = 256
VISIBILITY_SECONDS = 30  # every ReceiveMessage asks for it (the queues' default as well)
WAIT_SECONDS = 1
FIFO_GROUPS = 100
# Draining after the scenarios: generous, since moto receives about 10 messages a second.
DEFAULT_DRAIN_SECONDS = 300.0


@dataclass
class Tally:
    messages: int = 0
    calls: int = 0
    errors: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    # Of those, the calls that moved a message (an empty long poll's wait left out).
    moved_latencies_ms: list[float] = field(default_factory=list)
    # Wall clock (comparable across the client processes): when the first call was sent and
    # when the last call that moved a message was answered.
    first_call: float | None = None
    last_moved: float | None = None

    def record(self, messages: int, started: float) -> None:
        elapsed = time.perf_counter() - started
        now = time.time()
        self.messages += messages
        self.calls += 1
        self.latencies_ms.append(elapsed * 1000)
        if self.first_call is None:
            self.first_call = now - elapsed
        if messages:
            self.last_moved = now
            self.moved_latencies_ms.append(elapsed * 1000)

    def add(self, other: Tally) -> None:
        self.messages += other.messages
        self.calls += other.calls
        self.errors += other.errors
        self.latencies_ms.extend(other.latencies_ms)
        self.moved_latencies_ms.extend(other.moved_latencies_ms)
        self.first_call = min(
            (t for t in (self.first_call, other.first_call) if t is not None), default=None
        )
        self.last_moved = max(
            (t for t in (self.last_moved, other.last_moved) if t is not None), default=None
        )

    @property
    def active_seconds(self) -> float:
        """From the first call sent to the last call that moved a message answered: the
        clients' start-up and a closing empty receive left out (0 when nothing moved)."""
        if self.first_call is None or self.last_moved is None:
            return 0.0
        return self.last_moved - self.first_call


def client(endpoint: str) -> Any:
    return sqs_client(endpoint, pool=4)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# --- the client processes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """What one client process does: `scenario` on `url` for `seconds`, sending at most
    `budget` messages (None: no cap); its bodies start with `<run_id>-<index>-`."""

    scenario: str
    endpoint: str
    url: str
    seconds: float
    run_id: str
    index: int
    budget: int | None = None
    body_size: int = BODY_SIZE


# A scenario's work: one call (or receive + delete) per invocation; False means "stop".
Work = Callable[[Any, Tally], bool]


def client_loop(job: Job) -> tuple[Tally, DeliveryLedger]:
    """One client process: its own boto3 client, calling the scenario until time is up (or
    its budget is sent, or the scenario says stop); returns its tally and its ledger."""
    ledger = DeliveryLedger()
    work = SCENARIOS[job.scenario](job, ledger)
    sqs = client(job.endpoint)
    tally = Tally()
    stop_at = time.perf_counter() + job.seconds
    while time.perf_counter() < stop_at and (job.budget is None or tally.messages < job.budget):
        try:
            if not work(sqs, tally):
                break
        except Exception:  # a failed call counts as an error, the run goes on
            tally.errors += 1
    return tally, ledger


@dataclass
class ClientsResult:
    seconds: float
    tally: Tally
    ledger: DeliveryLedger


def run_clients(
    count: int, seconds: float, scenario: str, endpoint: str, url: str,
    budget: int | None = None, body_size: int = BODY_SIZE,
) -> ClientsResult:
    """Run `count` client processes (not threads: one GIL would cap the clients) at once."""
    run_id = uuid.uuid4().hex[:8]
    jobs = [Job(scenario, endpoint, url, seconds, run_id, n, budget, body_size)
            for n in range(count)]
    total, ledger = Tally(), DeliveryLedger()
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=count) as pool:
        parts = list(pool.map(client_loop, jobs))
    elapsed = time.perf_counter() - started
    for tally, part in parts:
        total.add(tally)
        ledger.absorb(part)
    return ClientsResult(elapsed, total, ledger)


def unique_bodies(job: Job) -> Iterator[str]:
    """`<run>-<client>-<n>-xxx...`, `job.body_size` characters each."""
    for n in itertools.count():
        head = f"{job.run_id}-{job.index}-{n}-"
        yield head + "x" * (job.body_size - len(head))


def send_one(job: Job, ledger: DeliveryLedger) -> Work:
    bodies = unique_bodies(job)

    def work(sqs: Any, tally: Tally) -> bool:
        body = next(bodies)
        started, requested = time.perf_counter(), time.time()
        message_id = sqs.send_message(QueueUrl=job.url, MessageBody=body)["MessageId"]
        ledger.record_acknowledged(Acknowledged(message_id, body, job.url, requested, time.time()))
        tally.record(1, started)
        return True
    return work


def send_batch(job: Job, ledger: DeliveryLedger, fifo: bool = False) -> Work:
    bodies = unique_bodies(job)

    def work(sqs: Any, tally: Tally) -> bool:
        entries: list[dict[str, str]] = [
            {"Id": str(i), "MessageBody": next(bodies)} for i in range(10)
        ]
        if fifo:
            for entry in entries:
                entry["MessageGroupId"] = f"g{uuid.uuid4().int % FIFO_GROUPS}"
                entry["MessageDeduplicationId"] = uuid.uuid4().hex
        started, requested = time.perf_counter(), time.time()
        reply = sqs.send_message_batch(QueueUrl=job.url, Entries=entries)
        answered = time.time()
        stored = reply.get("Successful") or []
        for entry in stored:
            body = entries[int(entry["Id"])]["MessageBody"]
            ledger.record_acknowledged(
                Acknowledged(entry["MessageId"], body, job.url, requested, answered)
            )
        tally.errors += len(reply.get("Failed") or [])
        tally.record(len(stored), started)
        return True
    return work


def send_batch_fifo(job: Job, ledger: DeliveryLedger) -> Work:
    return send_batch(job, ledger, fifo=True)


def receive_delete(job: Job, ledger: DeliveryLedger, stop_when_empty: bool = False) -> Work:
    def work(sqs: Any, tally: Tally) -> bool:
        started, requested = time.perf_counter(), time.time()
        messages = sqs.receive_message(
            QueueUrl=job.url, MaxNumberOfMessages=10, WaitTimeSeconds=WAIT_SECONDS,
            VisibilityTimeout=VISIBILITY_SECONDS,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        ).get("Messages", [])
        answered = time.time()
        for message in messages:
            ledger.record_delivery(
                Delivery.of_message(message, job.url, requested, answered, VISIBILITY_SECONDS)
            )
        if messages:
            tally.errors += delete_received(sqs, ledger, job.url, messages)
        tally.record(len(messages), started)
        return bool(messages) or not stop_when_empty
    return work


def receive_delete_until_empty(job: Job, ledger: DeliveryLedger) -> Work:
    return receive_delete(job, ledger, stop_when_empty=True)


def receive_delete_until_drained(job: Job, ledger: DeliveryLedger) -> Work:
    """Receive + delete until the first empty receive after something was received: the
    mixed consumers when the producers stop at a budget (an empty long poll at the start,
    before the producers' first sends, does not stop them)."""
    receive = receive_delete(job, ledger)

    def work(sqs: Any, tally: Tally) -> bool:
        before = tally.messages
        receive(sqs, tally)
        return tally.messages > before or tally.messages == 0
    return work


def delete_received(
    sqs: Any, ledger: DeliveryLedger, url: str, messages: Sequence[dict[str, Any]]
) -> int:
    """DeleteMessageBatch of received messages, each entry's outcome into the ledger;
    returns how many entries failed (a failed call is recorded, then raised)."""
    requested = time.time()
    try:
        reply = sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
        ])
    except Exception as exc:
        answered = time.time()
        for message in messages:
            ledger.record_delete(
                DeleteOutcome(message["MessageId"], requested, answered, type(exc).__name__)
            )
        raise
    answered = time.time()
    deleted = {int(e["Id"]) for e in reply.get("Successful") or []}
    refused = {int(e["Id"]): str(e.get("Code")) for e in reply.get("Failed") or []}
    for position, message in enumerate(messages):
        error = None if position in deleted else refused.get(position, "NoEntryInAnswer")
        ledger.record_delete(DeleteOutcome(message["MessageId"], requested, answered, error))
    return len(messages) - len(deleted)


DRAIN = "drain"
SCENARIOS: dict[str, Callable[[Job, DeliveryLedger], Work]] = {
    "send": send_one,
    "send-batch": send_batch,
    "receive-delete": receive_delete,
    "receive-delete-until-empty": receive_delete_until_empty,
    "receive-delete-until-drained": receive_delete_until_drained,
    "send-batch-fifo": send_batch_fifo,
    DRAIN: receive_delete_until_empty,
}


# --- checking a queue --------------------------------------------------------------------------


@dataclass
class QueueCheck:
    """A queue's verdict: every send acknowledged on it and every delivery from it, the
    drain after its last scenario included."""

    verdict: Verdict
    drain_seconds: float
    drained: bool  # every acknowledged message was received within --drain-seconds
    drain_bound: float
    drain_tally: Tally
    left: int | None  # messages the queue still reports after the drain (None: not read)

    @property
    def clean(self) -> bool:
        return self.verdict.clean

    def problems(self) -> str:
        """What makes the rows on this queue not a result ("" when clean)."""
        v = self.verdict
        parts = [
            f"{len(v.lost)} lost" if v.lost else "",
            f"{v.early_duplicates} early duplicates" if v.early_duplicates else "",
            f"{v.deliveries_after_delete} deliveries after delete"
            if v.deliveries_after_delete else "",
        ]
        return ", ".join(part for part in parts if part)


def drain(
    endpoint: str, url: str, ledger: DeliveryLedger, clients: int, bound: float
) -> QueueCheck:
    """Receive + delete with `clients` processes, in rounds (each client stops at its first
    empty receive) until every acknowledged message was received or `bound` seconds passed;
    the deliveries go into `ledger`, then its verdict is taken."""
    started = time.monotonic()
    tally = Tally()
    while ledger.undelivered_count() and (left := bound - (time.monotonic() - started)) > 0:
        result = run_clients(clients, left, DRAIN, endpoint, url)
        tally.add(result.tally)
        ledger.absorb(result.ledger)
    seconds = time.monotonic() - started
    drained = ledger.undelivered_count() == 0
    try:
        attributes = client(endpoint).get_queue_attributes(QueueUrl=url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ])["Attributes"]
        left_in_queue: int | None = sum(int(value) for value in attributes.values())
    except Exception:
        left_in_queue = None
    return QueueCheck(ledger.verdict(), seconds, drained, bound, tally, left_in_queue)


# --- the scenarios, in order -------------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    clients: int
    seconds: float
    tally: Tally
    phase: str = ""  # what `measure` called its `around` with for this row
    check: QueueCheck | None = None  # the queue's, once drained

    def line(self) -> str:
        rate = self.tally.messages / self.seconds
        lat = self.tally.latencies_ms
        return (f"| {self.scenario} | {self.clients} | {self.tally.messages} | "
                f"{self.rate_cell(rate)} | {self.check_cells()} | "
                f"{statistics.median(lat) if lat else 0:.1f} | {percentile(lat, 0.95):.1f} | "
                f"{percentile(lat, 0.99):.1f} | {self.tally.errors} |")

    def rate_cell(self, rate: float) -> str:
        if self.check is None or self.check.clean:
            return f"{rate:,.0f}"
        return f"~~{rate:,.0f}~~ **not a result: {self.check.problems()}**"

    def check_cells(self) -> str:
        if self.check is None:
            return " | ".join(["not checked"] * 6)
        check, v = self.check, self.check.verdict
        lost = f"**{len(v.lost)}**"
        if v.lost and not check.drained:
            lost += f" (not received within the {check.drain_bound:g} s drain)"
        return (f"{v.sent} | {v.received} | {lost} | {v.expected_duplicates} | "
                f"**{v.early_duplicates}** | **{v.deliveries_after_delete}**")


@dataclass
class Options:
    """How `measure` runs: which scenario groups, the send cap and the drain bound."""

    groups: Sequence[str] = GROUPS
    messages: int | None = None  # per send scenario, over all its clients; None: time only
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    body_size: int = BODY_SIZE  # characters per message body


# Wrapped around each timed phase of `measure`, given the phase's name ("send",
# "send-batch", "receive-delete", "mixed", "fifo-send-batch", "fifo-receive-delete"):
# peer_throughput.py reads the servers' CPU time there.
Around = Callable[[str], AbstractContextManager[object]]


def measure(
    endpoint: str, seconds: float, clients: int, options: Options | None = None,
    around: Around | None = None,
) -> list[Row]:
    """The scenarios of `options.groups` in order, each queue drained and checked after its
    last one. In the mixed scenario, when the sends have a budget (`options.messages`), the
    consumers stop at their first empty receive once the producers' messages are through
    (so the phase ends when the last message is deleted); without one both sides run for
    `seconds`."""
    options = options or Options()
    phase = around or (lambda name: contextlib.nullcontext())
    admin = client(endpoint)
    rows: list[Row] = []

    def fresh_queue(label: str, fifo: bool = False) -> str:
        return admin.create_queue(  # type: ignore[no-any-return]
            QueueName=f"bench-{label}-{uuid.uuid4().hex[:8]}" + (".fifo" if fifo else ""),
            Attributes={"FifoQueue": "true"} if fifo else {},
        )["QueueUrl"]

    def row(
        label: str, count: int, scenario: str, url: str, ledger: DeliveryLedger, name: str
    ) -> Row:
        budget = None
        if options.messages is not None and scenario.startswith("send"):
            budget = max(1, math.ceil(options.messages / count))
        result = run_clients(count, seconds, scenario, endpoint, url, budget, options.body_size)
        ledger.absorb(result.ledger)
        return Row(label, count, result.seconds, result.tally, name)

    def timed(
        label: str, count: int, scenario: str, url: str, ledger: DeliveryLedger, name: str
    ) -> Row:
        with phase(name):
            return row(label, count, scenario, url, ledger, name)

    def checked(url: str, ledger: DeliveryLedger, queue_rows: list[Row]) -> None:
        check = drain(endpoint, url, ledger, clients, options.drain_seconds)
        for queue_row in queue_rows:
            queue_row.check = check
        rows.extend(queue_rows)
        print(details(queue_rows, check), flush=True)

    if "send" in options.groups:
        url, ledger = fresh_queue("send"), DeliveryLedger()
        checked(url, ledger, [timed("SendMessage", clients, "send", url, ledger, "send")])
    if "batch" in options.groups:
        url, ledger = fresh_queue("batch"), DeliveryLedger()
        sent = timed("SendMessageBatch (10)", clients, "send-batch", url, ledger, "send-batch")
        # Drain what the batch senders left, through receive + delete-batch.
        received = timed("ReceiveMessage (10) + DeleteMessageBatch", clients,
                         "receive-delete-until-empty", url, ledger, "receive-delete")
        checked(url, ledger, [sent, received])
    if "mixed" in options.groups:
        url = fresh_queue("mixed")
        producers_ledger, consumers_ledger = DeliveryLedger(), DeliveryLedger()
        half = max(1, clients // 2)
        consume = "receive-delete" if options.messages is None else "receive-delete-until-drained"
        with phase("mixed"), ThreadPoolExecutor(max_workers=2) as both:
            producers = both.submit(row, "mixed: producers (SendMessageBatch 10)", half,
                                    "send-batch", url, producers_ledger, "mixed")
            consumers = both.submit(row, "mixed: consumers (receive 10 + delete batch)", half,
                                    consume, url, consumers_ledger, "mixed")
            mixed_rows = [producers.result(), consumers.result()]
        producers_ledger.absorb(consumers_ledger)
        checked(url, producers_ledger, mixed_rows)
    if "fifo" in options.groups:
        url, ledger = fresh_queue("fifo", fifo=True), DeliveryLedger()
        sent = timed(f"FIFO SendMessageBatch (10, {FIFO_GROUPS} groups)", clients,
                     "send-batch-fifo", url, ledger, "fifo-send-batch")
        received = timed("FIFO ReceiveMessage (10) + DeleteMessageBatch", clients,
                         "receive-delete-until-empty", url, ledger, "fifo-receive-delete")
        checked(url, ledger, [sent, received])
    return rows


def details(rows: Sequence[Row], check: QueueCheck) -> str:
    """For stdout, not the docs: one queue's rows, its verdict and what else the ledger saw."""
    v = check.verdict
    lines = [
        *[row.line() for row in rows],
        f"  queue verdict: sent {v.sent}, received {v.received}, lost {len(v.lost)}, expected "
        f"duplicates {v.expected_duplicates}, early duplicates {v.early_duplicates}, after "
        f"delete {v.deliveries_after_delete}; deliveries {v.deliveries}, changed bodies "
        f"{v.changed_bodies}, received although the send failed {v.received_unacknowledged}, "
        f"received but never deleted {len(v.not_deleted)}, repeats whose "
        f"ApproximateReceiveCount did not grow {v.receive_count_not_grown}",
        f"  drain: {check.drain_tally.messages} received in {check.drain_seconds:.1f} s "
        f"({'complete' if check.drained else f'stopped at the {check.drain_bound:g} s bound'}), "
        f"{check.drain_tally.errors} errors; left in the queue afterwards: "
        f"{'unknown' if check.left is None else check.left}",
        *[f"  unexpected: {e.kind} {e.message_id} answered {e.seconds_after_previous_request:.3f}"
          " s after the previous delivery was asked for" for e in v.examples],
        *[f"  lost: {message_id}" for message_id in v.lost[:10]],
    ]
    if not check.clean:
        lines.append(f"  NOT A RESULT: {check.problems()}")
    return "\n".join(lines)


def table(heading: str, rows: list[Row]) -> str:
    """The doc section's text: a line saying how it was measured, one row a scenario, how
    the messages were checked and, loudly, which rows are not a result."""
    failed = [row for row in rows if row.check is not None and not row.check.clean]
    return "\n".join([
        heading,
        "",
        "| scenario | client processes | messages | messages/s | sent (acknowledged) | "
        "received (distinct) | **lost** | expected duplicates | **early duplicates** | "
        "**after delete** | median ms | p95 ms | p99 ms | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[row.line() for row in rows],
        "",
        "Every message id checked (benchmarks/harness/delivery_ledger.py): unique bodies; after the "
        "last scenario on a queue it is drained (receive + delete, not timed) until every "
        "acknowledged message was received, and the rows on one queue share its counts. Early: "
        "a repeat delivery answered before the previous delivery's request was sent plus its "
        f"visibility timeout ({VISIBILITY_SECONDS} s). After delete: a delivery asked for after "
        "a successful delete of the same message was answered.",
        *([
            "",
            "**Not a result** (messages lost or delivered unexpectedly): "
            + "; ".join(f"{row.scenario}: {row.check.problems()}"
                        for row in failed if row.check is not None) + ".",
        ] if failed else []),
    ])


def clean(rows: Sequence[Row]) -> bool:
    """Every row's queue checked, nothing lost, no unexpected duplicate."""
    return all(row.check is not None and row.check.clean for row in rows)


def shout_failures(rows: Sequence[Row]) -> None:
    for row in rows:
        if row.check is None:
            print(f"NOT A RESULT: {row.scenario}: its queue was not checked", file=sys.stderr)
        elif not row.check.clean:
            print(f"NOT A RESULT: {row.scenario}: {row.check.problems()}", file=sys.stderr)


# --- command line ------------------------------------------------------------------------------


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """The options sqs_throughput and peer_throughput share beyond --seconds/--clients."""
    parser.add_argument("--scenarios", default=",".join(GROUPS),
                        help=f"comma-separated, some of {','.join(GROUPS)} (default: all)")
    parser.add_argument("--messages", type=int,
                        help="a send scenario also stops after about this many messages")
    parser.add_argument("--drain-seconds", type=float, default=DEFAULT_DRAIN_SECONDS,
                        help="at most this long draining a queue after its scenarios")


def options_from(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Options:
    groups = [group.strip() for group in args.scenarios.split(",") if group.strip()]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown or not groups:
        parser.error(f"--scenarios: {','.join(unknown) or 'none'}; choose from {','.join(GROUPS)}")
    return Options([g for g in GROUPS if g in groups], args.messages, args.drain_seconds)


def check_options_command(args: argparse.Namespace) -> list[str]:
    """The shared options as they would be typed, when not at their defaults."""
    return [
        *([f"--scenarios {args.scenarios}"] if args.scenarios != ",".join(GROUPS) else []),
        *([f"--messages {args.messages}"] if args.messages is not None else []),
        *([f"--drain-seconds {args.drain_seconds:g}"]
          if args.drain_seconds != DEFAULT_DRAIN_SECONDS else []),
    ]


def start_local_server(
    work: Path, server_args: list[str]
) -> tuple[str, Callable[[], None], str]:
    """Embedded Redis and Cassandra plus one `cqs serve`; returns its endpoint, a stop and
    the Cassandra's summary for a report's heading."""
    from benchmarks.harness.servers import cassandra_summary, shipped_cassandra
    from cqs.embedded.redis_server import EmbeddedRedis

    redis = EmbeddedRedis(work / "redis")
    redis.start()
    cassandra = shipped_cassandra(work / "cassandra")
    cassandra.start()
    server, endpoint, _log = start_server(
        redis.url, cassandra.contact_point, "cqs_bench", work,
        ["--log-level", "WARNING", *server_args],
    )

    def stop() -> None:
        server.terminate()
        server.wait(timeout=20)
        redis.stop()
        cassandra.stop()

    return endpoint, stop, cassandra_summary(cassandra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", help="measure this running server instead of starting one")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="extra `cqs serve` argument, e.g. --server-arg=--event-loop=asyncio")
    add_check_arguments(parser)
    args = parser.parse_args()
    options = options_from(args, parser)

    def stop() -> None:
        pass

    store = "Cassandra"
    with tempfile.TemporaryDirectory(prefix="cqs-bench-") as work:
        endpoint = args.endpoint
        if endpoint is None:
            endpoint, stop, store = start_local_server(Path(work), args.server_arg)
        try:
            rows = measure(endpoint, args.seconds, args.clients, options)
        finally:
            stop()
    command = " ".join(["python benchmarks/sqs_throughput.py", f"--seconds {args.seconds:g}",
                        f"--clients {args.clients}", *check_options_command(args),
                        *(f"--server-arg={a}" for a in args.server_arg)])
    text = table(
        f"Measured {time.strftime('%Y-%m-%d')} on {machine_summary()}; one `cqs serve` process, "
        f"embedded Redis and {store} on the same machine, boto3 clients in the "
        f"benchmark's client processes (which compete for the same 2 CPUs). Command: `{command}`.",
        rows,
    )
    print(text)
    shout_failures(rows)
    if args.write_docs:
        write_section(DOC, BEGIN, END, f"{BEGIN}\n{text}\n{END}", "Performance")
    return 0 if clean(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
