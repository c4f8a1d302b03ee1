"""Concurrency soak: thousands of concurrent long polls on one `cqs serve`, each message once.

Issue 13: past ~95 concurrent long polls on one server the same message went to many
consumers. This script drives one server with N consumer processes, each holding M asyncio
long polls (WaitTimeSeconds 20, MaxNumberOfMessages 1..10, a DeleteMessageBatch of what each
poll got), while one producer process sends `--messages` messages with SendMessage and
SendMessageBatch (2..10) over `--queues` standard queues and `--fifo-queues` FIFO queues
(a message group per producer task, MessageDeduplicationId = body). Every body is unique;
every delivery is recorded with the time its receive was sent and answered, its
ApproximateReceiveCount, and the outcome of its delete. The parent merges the records
(benchmarks/harness/delivery_ledger.py) and reports per level: acknowledged, distinct received,
lost (must be 0), duplicates split into expected (answered at or after the previous
delivery's request + the visibility timeout), early and after a successful delete (both
unexpected: must be 0), errors by SQS code, latency percentiles and throughput.

The clients speak AWS JSON 1.0 through aiohttp (benchmarks/harness/sqs_wire.py), not boto3: a boto3
long poll blocks a thread for 20 s, so 5,000 of them would take 5,000 threads and measure
the client; one event loop per process holds a thousand waiting polls cheaply.

The producer stops when it has sent `--messages` (or after `--seconds`); the level ends
when every acknowledged message has been deleted (or `--drain-seconds` later); then no new
poll starts and those in flight get their wait to come back (a late duplicate would show
there). So a level takes at most `--seconds` + `--drain-seconds` + WaitTimeSeconds + about
a minute of start and stop.
It exits non-zero if anything was lost or delivered unexpectedly. `--write-docs` writes one
table row per level between the concurrency-soak markers of docs/reliability.md.

    python benchmarks/concurrency_soak.py --polls 200 --messages 2000
    python benchmarks/concurrency_soak.py --levels 50,200,1000,5000 --messages 20000 --write-docs
    python benchmarks/concurrency_soak.py --levels 1000 --workers 2
    python benchmarks/concurrency_soak.py --polls 500 --endpoint http://127.0.0.1:9324

Without `--endpoint` it starts an embedded Redis, an embedded Cassandra and `cqs serve`
(`--workers N` passed on). Imports the launcher from benchmarks.harness.servers and the shared wire client;
never the service or the adapters.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import multiprocessing.queues
import shlex
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.clients import arrivals, raise_open_file_limit  # noqa: E402
from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict, percentile  # noqa: E402
from benchmarks.harness.report import DocSection, host_lines  # noqa: E402
from benchmarks.harness.servers import target_server  # noqa: E402
from benchmarks.harness.sqs_wire import (  # noqa: E402
    CALL_ERRORS,
    ConsumerPool,
    PollPlan,
    SendPlan,
    SqsJsonClient,
    client_session,
    count_and_delete_queues,
    create_queues,
    error_code,
    run_client,
    send_messages,
)

SECTION = DocSection(ROOT / "docs" / "reliability.md", "concurrency-soak", "Reliability")
FLUSH_SECONDS = 0.5  # how often a client process ships its records to the parent
POLLS_STARTED_PER_SECOND = 1000  # the ramp: so many new connections a second, all processes
READY_SECONDS = 120.0  # the consumers' ramp must end within this (plus the ramp itself)


# --- the client processes (spawned: module-level functions, picklable arguments) -------------


async def ship_records(
    ledger: DeliveryLedger, outbox: multiprocessing.queues.Queue[Any], until: Callable[[], bool]
) -> None:
    """Ship the ledger's new records to the parent every FLUSH_SECONDS until `until()`."""
    while not until():
        await asyncio.sleep(FLUSH_SECONDS)
        if not ledger.is_empty:
            outbox.put(("records", ledger.take()))


def consumer_process(
    index: int, endpoint: str, plan: PollPlan, outbox: multiprocessing.queues.Queue[Any],
    stop: Any, grace_seconds: float,
) -> None:
    run_client(consume(index, endpoint, plan, outbox, stop, grace_seconds))


async def consume(
    index: int, endpoint: str, plan: PollPlan, outbox: multiprocessing.queues.Queue[Any],
    stop: Any, grace_seconds: float,
) -> None:
    ledger = DeliveryLedger()
    async with client_session() as session:
        pool = ConsumerPool(SqsJsonClient(session, endpoint), ledger, plan)
        pool.start()
        await pool.ramped()
        outbox.put(("ready", index))
        await ship_records(ledger, outbox, stop.is_set)
        cancelled = await pool.stop(grace_seconds)
    outbox.put(("records", ledger.take()))
    outbox.put(("consumer-done", index, cancelled))


def producer_process(
    endpoint: str, plan: SendPlan, outbox: multiprocessing.queues.Queue[Any], stop: Any
) -> None:
    run_client(produce(endpoint, plan, outbox, stop))


async def produce(
    endpoint: str, plan: SendPlan, outbox: multiprocessing.queues.Queue[Any], stop: Any
) -> None:
    ledger = DeliveryLedger()
    stopping = asyncio.Event()

    async def watch_stop() -> None:
        while not stop.is_set():
            await asyncio.sleep(0.1)
        stopping.set()

    async with client_session() as session:
        watcher = asyncio.create_task(watch_stop())
        shipper = asyncio.create_task(ship_records(ledger, outbox, stopping.is_set))
        await send_messages(SqsJsonClient(session, endpoint), ledger, plan, stopping)
        stopping.set()
        watcher.cancel()
        await asyncio.gather(watcher, shipper, return_exceptions=True)
    outbox.put(("records", ledger.take()))
    outbox.put(("producer-done",))


# --- the parent ------------------------------------------------------------------------------


@dataclass
class Inbox:
    """What the client processes reported so far; the records go into `ledger`."""

    messages: multiprocessing.queues.Queue[Any]
    ledger: DeliveryLedger = field(default_factory=DeliveryLedger)
    ready: set[int] = field(default_factory=set)
    consumers_done: dict[int, int] = field(default_factory=dict)  # index -> polls cancelled
    producer_done: bool = False

    def pump(self, seconds: float) -> None:
        """Take whatever arrives for `seconds`."""
        for message in arrivals(self.messages, seconds):
            kind = message[0]
            if kind == "records":
                self.ledger.absorb(message[1])
            elif kind == "ready":
                self.ready.add(message[1])
            elif kind == "consumer-done":
                self.consumers_done[message[1]] = message[2]
            elif kind == "producer-done":
                self.producer_done = True

    def pump_until(self, condition: Callable[[], bool], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.pump(0.2)
        return True


@dataclass
class LevelResult:
    polls: int
    processes: int
    verdict: Verdict
    ledger: DeliveryLedger
    load_seconds: float  # first send until every acknowledged message was deleted (or the bound)
    finished: bool  # every acknowledged message deleted within the bounds
    cancelled_polls: int
    left_in_queues: int
    problems: list[str]

    @property
    def messages_per_second(self) -> float:
        return self.verdict.received / self.load_seconds if self.load_seconds else 0.0


def split(total: int, parts: int) -> list[int]:
    share, extra = divmod(total, parts)
    return [share + (n < extra) for n in range(parts)]


def run_level(endpoint: str, polls: int, args: argparse.Namespace) -> LevelResult:
    run = uuid.uuid4().hex[:8]
    names = [f"csoak-{run}-{polls}-{k}" for k in range(args.queues)]
    names += [f"csoak-{run}-{polls}-{k}.fifo" for k in range(args.fifo_queues)]
    queue_urls = asyncio.run(create_queues(endpoint, names, args.visibility_seconds))
    processes = min(args.processes, polls)
    context = multiprocessing.get_context("spawn")
    inbox = Inbox(context.Queue())
    stop_consuming, stop_producing = context.Event(), context.Event()
    grace = args.wait_seconds + 10.0
    ramp = polls / POLLS_STARTED_PER_SECOND
    children: list[Any] = []
    offset = 0
    for index, share in enumerate(split(polls, processes)):
        rotated = queue_urls[offset % len(queue_urls):] + queue_urls[:offset % len(queue_urls)]
        offset += share
        plan = PollPlan(rotated, share, args.max_messages, args.wait_seconds,
                        args.visibility_seconds, ramp_seconds=ramp)
        children.append(context.Process(
            target=consumer_process, name=f"consumer-{index}", daemon=True,
            args=(index, endpoint, plan, inbox.messages, stop_consuming, grace),
        ))
    problems: list[str] = []
    for child in children:
        child.start()
    if not inbox.pump_until(lambda: len(inbox.ready) == processes, READY_SECONDS + ramp):
        problems.append(f"only {len(inbox.ready)} of {processes} consumer processes ramped up")
    print(f"  {polls} long polls waiting in {processes} processes; sending", flush=True)

    producer = context.Process(
        target=producer_process, name="producer", daemon=True,
        args=(endpoint, SendPlan(queue_urls, args.messages, args.producers, run),
              inbox.messages, stop_producing),
    )
    producer.start()
    children.append(producer)
    began = time.monotonic()
    if not inbox.pump_until(lambda: inbox.producer_done or not producer.is_alive(),
                            args.seconds):
        problems.append(f"the producer was stopped after {args.seconds:g} s")
    stop_producing.set()
    inbox.pump_until(lambda: inbox.producer_done or not producer.is_alive(), 60)
    if not inbox.producer_done:
        problems.append(f"the producer did not report its end (exit code {producer.exitcode})")
    # Consumers go on until every acknowledged message is deleted, or the drain bound.
    finished = inbox.pump_until(lambda: inbox.ledger.undeleted_count() == 0, args.drain_seconds)
    load_seconds = time.monotonic() - began
    stop_consuming.set()
    if not inbox.pump_until(lambda: len(inbox.consumers_done) == processes, grace + 30):
        problems.append(f"only {len(inbox.consumers_done)} of {processes} consumer processes "
                        "reported their end")
    for child in children:
        child.join(10)
        if child.is_alive():
            child.terminate()
            child.join(5)
            problems.append(f"{child.name} had to be terminated")
        elif child.exitcode:
            problems.append(f"{child.name} exited with code {child.exitcode}")
    inbox.pump(0.2)
    try:
        left = asyncio.run(count_and_delete_queues(endpoint, queue_urls))
    except CALL_ERRORS as exc:
        left = -1
        problems.append(f"the queues could not be counted and deleted: {error_code(exc)}")
    return LevelResult(
        polls, processes, inbox.ledger.verdict(), inbox.ledger, load_seconds, finished,
        sum(inbox.consumers_done.values()), left, problems,
    )


# --- the report ------------------------------------------------------------------------------


LATENCY_ROWS = [
    ("SendMessage", "SendMessage"),
    ("SendMessageBatch", "SendMessageBatch"),
    ("ReceiveMessage", "ReceiveMessage (non-empty)"),
    ("ReceiveMessage (empty)", "ReceiveMessage (empty)"),
    ("DeleteMessageBatch", "DeleteMessageBatch"),
]


def milliseconds(values: list[float]) -> str:
    return " | ".join(
        f"{percentile(values, p) * 1000:.0f}" for p in (0.5, 0.9, 0.99, 1.0)
    )


def level_row(result: LevelResult) -> str:
    v, ledger = result.verdict, result.ledger
    errors = " / ".join(str(ledger.errors_of(*actions)) for actions in (
        ("ReceiveMessage",), ("SendMessage", "SendMessageBatch", "SendMessageBatch entry"),
        ("DeleteMessageBatch", "DeleteMessageBatch entry"),
    ))
    receive = ledger.durations.get("ReceiveMessage", [])
    end_to_end = ledger.end_to_end_seconds()
    return (
        f"| {result.polls} | {result.processes} × {result.polls // result.processes}"
        f"{'+' if result.polls % result.processes else ''} | {v.sent} | {v.received} | "
        f"**{len(v.lost)}** | {v.expected_duplicates} | **{v.early_duplicates}** | "
        f"**{v.deliveries_after_delete}** | {errors} | "
        f"{percentile(receive, 0.5) * 1000:.0f} / {percentile(receive, 0.99) * 1000:.0f} | "
        f"{percentile(end_to_end, 0.5) * 1000:.0f} / {percentile(end_to_end, 0.99) * 1000:.0f} | "
        f"{result.load_seconds:.0f}{'' if result.finished else ' (bound)'} | "
        f"{result.messages_per_second:.0f} |"
    )


def error_table(results: list[LevelResult]) -> list[str]:
    rows = [
        f"| {result.polls} | {action} | {code} | {count} |"
        for result in results
        for (action, code), count in sorted(result.ledger.errors.items())
    ]
    if not rows:
        return ["No call failed."]
    return ["| long polls | call | error | count |", "| --- | --- | --- | --- |", *rows]


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def report(results: list[LevelResult], args: argparse.Namespace, command: str, server: str) -> str:
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} against {server}. Per level: the long polls "
        f"(WaitTimeSeconds {args.wait_seconds}, MaxNumberOfMessages 1 to {args.max_messages}, "
        f"VisibilityTimeout {args.visibility_seconds} s, each followed by a DeleteMessageBatch) "
        "run as asyncio tasks in the consumer processes, one aiohttp session each, speaking AWS "
        f"JSON 1.0; one producer process with {args.producers} tasks sends {args.messages} "
        "messages alternating SendMessage and SendMessageBatch (2 to 10) over "
        f"{plural(args.queues, 'standard queue')} and {plural(args.fifo_queues, 'FIFO queue')} "
        "(a message group per producer task, deduplication id = body). Everything on the "
        "same machine. "
        f"Command: `{command}`.",
        "",
        *host_lines(),
        "",
        "| long polls | processes × polls | sent (acknowledged) | received (distinct) | "
        "**lost** | expected duplicates | **early duplicates** | **after delete** | "
        "errors: receive / send / delete | non-empty receive p50 / p99 ms | "
        "send→receive p50 / p99 ms | seconds | messages/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[level_row(result) for result in results],
        *[
            f"\nAt {result.polls} long polls: " + "; ".join(result.problems) + "."
            for result in results if result.problems
        ],
        "",
        "Early: a repeat delivery answered before the previous delivery's request was sent plus "
        "its visibility timeout. After delete: a delivery asked for after a successful delete "
        "of the same message was answered. Seconds: from the first send until every "
        "acknowledged message was deleted (\"bound\": `--seconds` + `--drain-seconds` ran out "
        "first; lost then means not received within that time).",
        "",
        *error_table(results),
        "",
        "| long polls | action | calls | p50 ms | p90 ms | p99 ms | max ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        for key, label in LATENCY_ROWS:
            values = result.ledger.durations.get(key, [])
            lines.append(f"| {result.polls} | {label} | {len(values)} | {milliseconds(values)} |")
        end_to_end = result.ledger.end_to_end_seconds()
        lines.append(f"| {result.polls} | send → first receive, per message | "
                     f"{len(end_to_end)} | {milliseconds(end_to_end)} |")
    return "\n".join(lines)


def details(result: LevelResult) -> str:
    """For stdout, not the docs: what else the ledger saw at this level."""
    v = result.verdict
    lines = [
        f"level {result.polls}: deliveries {v.deliveries}, received although the send failed "
        f"{v.received_unacknowledged}, received but never deleted {len(v.not_deleted)}, repeats "
        f"whose ApproximateReceiveCount did not grow {v.receive_count_not_grown}, polls "
        f"cancelled at the end {result.cancelled_polls}, left in the queues "
        f"{result.left_in_queues}",
        *[f"  problem: {problem}" for problem in result.problems],
        *[f"  unexpected: {e.kind} {e.message_id} answered {e.seconds_after_previous_request:.3f}"
          " s after the previous delivery was asked for" for e in v.examples],
        *[f"  lost: {message_id}" for message_id in v.lost[:10]],
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--polls", type=int, default=200, help="concurrent long polls")
    parser.add_argument("--levels", help="several --polls values run back to back: 50,200,1000")
    parser.add_argument("--processes", type=int, default=5, help="consumer processes per level")
    parser.add_argument("--messages", type=int, default=2000, help="messages per level")
    parser.add_argument("--producers", type=int, default=16, help="producer tasks")
    parser.add_argument("--queues", type=int, default=3, help="standard queues")
    parser.add_argument("--fifo-queues", type=int, default=1)
    parser.add_argument("--wait-seconds", type=int, default=20)
    parser.add_argument("--visibility-seconds", type=int, default=30)
    parser.add_argument("--max-messages", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="the producer stops after this long, sent or not")
    parser.add_argument("--drain-seconds", type=float, default=60.0,
                        help="then at most this long until every acknowledged message is deleted")
    parser.add_argument("--workers", type=int, default=1, help="`cqs serve --workers`")
    parser.add_argument("--endpoint", help="a running server instead of an embedded one")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")] if args.levels else [args.polls]
    command = "python benchmarks/concurrency_soak.py " + " ".join(
        shlex.quote(part) for part in sys.argv[1:] if part != "--write-docs"
    )
    raise_open_file_limit(max(levels) + 4096)  # the embedded server inherits it

    results: list[LevelResult] = []
    with tempfile.TemporaryDirectory(prefix="cqs-csoak-") as scratch, \
            target_server(args.endpoint, None, args.workers, Path(scratch)) as server:
        for polls in levels:
            print(f"level {polls}: starting", flush=True)
            result = run_level(server.endpoint, polls, args)
            results.append(result)
            print(level_row(result), flush=True)
            print(details(result), flush=True)
    text = report(results, args, command, server.description)
    print(text)
    if args.write_docs:
        SECTION.write(text)
    return 0 if all(result.verdict.clean for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
