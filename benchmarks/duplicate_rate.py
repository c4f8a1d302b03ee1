"""The long duplicate-rate run: millions of messages through one queue set, each id checked.

The CQS paper reports "1 duplicate per million, 1 loss per 2 million". This script pushes
`--messages` (default 2,000,000) messages through `--queues` standard queues of one
`cqs serve` over an embedded Redis and an embedded Cassandra (or `--endpoint`), with no
faults: a producer process (`--producers` asyncio tasks, SendMessageBatch of 10) and
`--consumer-processes` processes of `--consumers` long polls each (ReceiveMessage of up to
10, then DeleteMessageBatch), both in benchmarks/harness/duplicate_clients.py. Producers pause while more than `--backlog` messages are
acknowledged and not yet deleted, so the queues stay short and the run measures the
steady flow, not a growing cache. The load stops at `--messages` or after `--minutes`;
then the consumers drain (at most `--drain-seconds`).

Every message's body is `<run>-<n>-<padding>`; the consumers check each body they get
against the one its number was sent with, and the parent keeps a compact ledger
(benchmarks/harness/compact_ledger.py, about 70 bytes a message) of every acknowledged send,
delivery and delete: lost, expected duplicates (after the visibility timeout), early
duplicates and deliveries after delete, wrong message ids, per million messages. Progress
goes to stdout every 30 s. The script exits 1 if anything was lost or delivered
unexpectedly. `--write-docs` replaces the section of docs/performance.md between its
markers.

    python benchmarks/duplicate_rate.py --messages 2000000 --minutes 45 --write-docs
    python benchmarks/duplicate_rate.py --messages 20000 --minutes 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import multiprocessing.queues
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.clients import arrivals  # noqa: E402
from benchmarks.harness.compact_ledger import CompactLedger, CompactVerdict, percentile  # noqa: E402
from benchmarks.harness.duplicate_clients import (  # noqa: E402
    BATCH,
    Plan,
    Records,
    consumer_process,
    producer_process,
)
from benchmarks.harness.report import DocSection, command_line, host_lines  # noqa: E402
from benchmarks.harness.servers import target_server  # noqa: E402
from benchmarks.harness.sqs_wire import count_and_delete_queues, create_queues  # noqa: E402

SECTION = DocSection(ROOT / "docs" / "performance.md", "duplicate_rate", "Performance")
PROGRESS_SECONDS = 30.0


# --- the parent ------------------------------------------------------------------------------


@dataclass
class Run:
    ledger: CompactLedger
    channel: multiprocessing.queues.Queue[Any]
    errors: dict[str, int]
    consumers_done: set[int]
    producer_done: bool = False

    def pump(self, seconds: float) -> None:
        for message in arrivals(self.channel, seconds):
            if message[0] == "records":
                self.absorb(*message[1:])
            elif message[0] == "producer-done":
                self.producer_done = True
            elif message[0] == "consumer-done":
                self.consumers_done.add(message[1])

    def absorb(self, attempts: list[int], acks: Records, deliveries: Records,
               deletes: Records, errors: dict[str, int]) -> None:
        ledger = self.ledger
        for n in attempts:
            ledger.record_attempt(n)
        for n, message_id, requested in acks:
            ledger.record_acknowledged(n, message_id, requested)
        for n, message_id, requested, answered in deliveries:
            ledger.record_delivery(n, message_id, requested, answered)
        for n, answered, ok in deletes:
            ledger.record_delete(n, answered, ok)
        for what, count in errors.items():
            self.errors[what] = self.errors.get(what, 0) + count


@contextlib.contextmanager
def client_processes(plan: Plan, args: argparse.Namespace, run: Run) -> Iterator[
        tuple[Any, Any, Any, list[Any]]]:
    context = multiprocessing.get_context("spawn")
    paused, stop_sending, stop_polling = context.Event(), context.Event(), context.Event()
    children = [context.Process(target=producer_process, daemon=True, name="producer",
                                args=(plan, args.producers, run.channel, paused, stop_sending))]
    children += [
        context.Process(target=consumer_process, daemon=True, name=f"consumer-{index}",
                        args=(plan, args.consumers, index, run.channel, stop_polling))
        for index in range(args.consumer_processes)
    ]
    for child in children:
        child.start()
    try:
        yield paused, stop_sending, stop_polling, children
    finally:
        stop_sending.set()
        stop_polling.set()
        for child in children:
            child.join(args.wait_seconds + 40)
            if child.is_alive():
                child.terminate()


def run_load(endpoint: str, args: argparse.Namespace) -> tuple[Run, dict[str, float]]:
    run_id = uuid.uuid4().hex[:8]
    urls = asyncio.run(create_queues(endpoint, [f"duprate-{run_id}-{k}" for k in
                                                range(args.queues)], args.visibility_seconds))
    plan = Plan(endpoint, tuple(urls), run_id, args.messages, args.body_bytes,
                args.wait_seconds, args.visibility_seconds)
    run = Run(CompactLedger(args.messages, args.visibility_seconds),
              multiprocessing.get_context("spawn").Queue(), {}, set())
    ledger = run.ledger
    timing: dict[str, float] = {}
    with client_processes(plan, args, run) as (paused, stop_sending, stop_polling, children):
        began = time.monotonic()
        deadline, report_at = began + args.minutes * 60, began + PROGRESS_SECONDS
        while not run.producer_done and time.monotonic() < deadline:
            run.pump(0.2)
            if ledger.backlog > args.backlog:
                paused.set()
            elif ledger.backlog < args.backlog // 2:
                paused.clear()
            if time.monotonic() >= report_at:
                report_at += PROGRESS_SECONDS
                elapsed = time.monotonic() - began
                print(f"{elapsed / 60:5.1f} min: {ledger.acknowledged_total:,} sent, "
                      f"{ledger.deleted_total:,} deleted ({ledger.deleted_total / elapsed:,.0f}"
                      f"/s), backlog {ledger.backlog:,}, errors {sum(run.errors.values())}",
                      flush=True)
        timing["load_seconds"] = time.monotonic() - began
        stop_sending.set()
        paused.clear()
        while not run.producer_done and children[0].is_alive():
            run.pump(0.2)
        drain_until = time.monotonic() + args.drain_seconds
        while ledger.backlog > 0 and time.monotonic() < drain_until:
            run.pump(0.2)
        timing["drained_seconds"] = time.monotonic() - began
        stop_polling.set()
        while len(run.consumers_done) < args.consumer_processes and any(
                child.is_alive() for child in children[1:]):
            run.pump(0.2)
        run.pump(0.5)
    timing["left_in_queues"] = asyncio.run(count_and_delete_queues(endpoint, urls))
    return run, timing


def per_million(count: int, of: int) -> str:
    return f"{1_000_000 * count / of:.2f}" if of else "—"


def report(verdict: CompactVerdict, run: Run, timing: dict[str, float],
           args: argparse.Namespace, description: str, command: str) -> str:
    latencies = sorted(run.ledger.end_to_end_seconds())
    sent = verdict.sent
    reached = "" if sent >= args.messages else (
        f" **The run reached {sent:,} of the {args.messages:,} messages asked for within "
        f"its {args.minutes:g} minutes**; {args.messages - sent:,} remain.")
    rows = [
        ("messages acknowledged (sent)", f"{sent:,}"),
        ("distinct messages received", f"{verdict.received:,}"),
        ("deliveries", f"{verdict.deliveries:,}"),
        ("**lost**", f"**{verdict.lost}** ({per_million(verdict.lost, sent)} per million; "
         "CQS: 0.5 per million)"),
        ("**duplicates before the visibility timeout** (early + after delete)",
         f"**{verdict.unexpected_duplicates}** ({verdict.early_duplicates} early, "
         f"{verdict.deliveries_after_delete} after delete; "
         f"{per_million(verdict.unexpected_duplicates, sent)} per million; CQS: 1 per million)"),
        ("expected duplicates (after the visibility timeout)",
         f"{verdict.expected_duplicates} ({per_million(verdict.expected_duplicates, sent)} "
         "per million)"),
        ("deliveries with a wrong message id", str(verdict.wrong_ids)),
        ("received but never acknowledged (a send that failed on the client's side)",
         str(verdict.received_unacknowledged)),
        ("received but not deleted", str(verdict.not_deleted)),
        ("left in the queues at the end", f"{timing['left_in_queues']:.0f}"),
        ("errors by call and code", ", ".join(f"{k}: {v}" for k, v in
                                              sorted(run.errors.items())) or "none"),
        ("load time (send + receive)", f"{timing['load_seconds'] / 60:.1f} min"),
        ("throughput (received, load + drain)",
         f"{verdict.received / timing['drained_seconds']:,.0f} msg/s"),
        ("send → first receive, median / p99 / max",
         " / ".join(f"{1000 * percentile(latencies, f):,.0f} ms" for f in (0.5, 0.99, 1.0))),
    ]
    return "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')}. Command: `{command}`.{reached}",
        "",
        *host_lines(),
        f"- server: {description}; clients: one producer process ({args.producers} tasks, "
        f"SendMessageBatch of {BATCH}, {args.body_bytes}-byte bodies) and "
        f"{args.consumer_processes} consumer processes of {args.consumers} long polls each "
        f"(ReceiveMessage of up to {BATCH}, WaitTimeSeconds {args.wait_seconds}, "
        f"VisibilityTimeout {args.visibility_seconds} s, then DeleteMessageBatch) over "
        f"{args.queues} standard queues, at most {args.backlog:,} messages waiting; no faults",
        "",
        "| | |",
        "| --- | --- |",
        *[f"| {name} | {value} |" for name, value in rows],
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--minutes", type=float, default=45.0, help="bound on the load")
    parser.add_argument("--drain-seconds", type=float, default=300.0)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--producers", type=int, default=8, help="tasks, one batch in flight each")
    parser.add_argument("--consumer-processes", type=int, default=2)
    parser.add_argument("--consumers", type=int, default=8, help="long polls per process")
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--body-bytes", type=int, default=100)
    parser.add_argument("--wait-seconds", type=int, default=2)
    parser.add_argument("--visibility-seconds", type=int, default=30)
    parser.add_argument("--endpoint", help="a running server instead of an embedded one")
    parser.add_argument("--workers", type=int, default=1, help="`cqs serve --workers N`")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = command_line("duplicate_rate.py")
    with (tempfile.TemporaryDirectory(prefix="cqs-duprate-") as work,
          target_server(args.endpoint, None, args.workers, Path(work)) as server):
        run, timing = run_load(server.endpoint, args)
    verdict = run.ledger.verdict()
    text = report(verdict, run, timing, args, server.description, command)
    print(text)
    if args.write_docs:
        SECTION.write(text)
    if not verdict.clean:
        print(f"NOT CLEAN: {verdict.lost} lost (e.g. {verdict.lost_examples}), "
              f"{verdict.unexpected_duplicates} unexpected duplicates "
              f"(e.g. {verdict.early_examples}), {verdict.wrong_ids} wrong ids",
              file=sys.stderr)
    return 0 if verdict.clean else 1


if __name__ == "__main__":
    sys.exit(main())
