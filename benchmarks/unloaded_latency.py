"""Unloaded latency, one request in flight: cqs beside LocalStack and the floor.

The servers of `--servers` (default floor, localstack, elasticmq, cqs; started by
benchmarks/harness/peer_servers.py, one after another) each get `--rounds` rounds of three
measurements, every round on fresh queues:

- send: `--messages` sequential SendMessage calls after `--warmup` untimed ones, with the
  raw client of benchmarks/harness/blocking_sqs.py (http.client, one keep-alive connection);
- send, boto3: the same with an unmodified boto3 client (JSON protocol), to show what an
  SDK adds on top (leave out with `--no-boto3`);
- end to end: one producer, one consumer thread long-polling (WaitTimeSeconds 20,
  MaxNumberOfMessages 1) and deleting each message; per message, the consumer's answer
  time minus the send's start (one clock, one process); the next send leaves once the
  previous message was deleted and the next long poll has been waiting `--settle-ms`.

Percentiles are over every round's timed calls; the p50 column also gives the lowest and
highest round's p50. Client CPU is the timing thread's user + system time per call. Every
message id is checked (benchmarks/harness/delivery_ledger.py): each queue is drained after its
phase, and a lost message or an early duplicate makes the row "not a result" and the exit
status 1. `--write-docs` regenerates docs/performance.md's section between its markers.

    python benchmarks/unloaded_latency.py --rounds 3 --write-docs
    python benchmarks/unloaded_latency.py --servers floor,cqs --messages 500 --rounds 1
    python benchmarks/unloaded_latency.py --localstack-python <venv>/bin/python
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from botocore.exceptions import BotoCoreError, ClientError  # noqa: E402

from benchmarks.harness import peer_servers as servers  # noqa: E402
from benchmarks.harness.blocking_sqs import BlockingSqs, Timings, drain, time_end_to_end, time_sends  # noqa: E402
from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict, percentile  # noqa: E402
from benchmarks.harness.peer_servers import Target  # noqa: E402
from benchmarks.harness.report import DocSection, git_commit, load_average_span, system_summary  # noqa: E402
from cqs.settings import EMBEDDED_COMMITLOG_SYNC_MODES  # noqa: E402

SECTION = DocSection(ROOT / "docs" / "performance.md", "unloaded_latency", "Performance")
SERVERS = ("floor", "localstack", "elasticmq", "cqs", "cqs2")  # of peer_servers.STARTERS
DEFAULT_SERVERS = "floor,localstack,elasticmq,cqs"
SEND, SEND_BOTO3, END_TO_END = "send", "send, boto3 client", "end to end (send → receive)"
QUEUE_KEYS = {SEND: "send", SEND_BOTO3: "boto3", END_TO_END: "e2e"}
TARGETS_MS = {SEND: 1.0, END_TO_END: 2.0}  # issue 30's p50 targets for cqs (on Cassandra 5.0)


@dataclass
class Cell:
    """One server in one measurement, over all rounds."""

    server: str
    measurement: str
    round_p50s: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    client_cpu_seconds: float = 0.0
    ledger: DeliveryLedger = field(default_factory=DeliveryLedger)
    missed: int = 0

    def add(self, timings: Timings) -> None:
        self.round_p50s.append(percentile(timings.seconds, 0.5) * 1000)
        self.seconds += timings.seconds
        self.client_cpu_seconds += timings.client_cpu_seconds
        self.ledger.absorb(timings.ledger)
        self.missed += timings.missed

    def ms(self, fraction: float) -> float:
        return percentile(self.seconds, fraction) * 1000

    @functools.cached_property
    def verdict(self) -> Verdict:
        return self.ledger.verdict()

    @property
    def errors(self) -> int:
        return sum(self.ledger.errors.values())

    @property
    def clean(self) -> bool:
        return self.verdict.clean and not self.missed and bool(self.seconds)


def measure_server(target: Target, args: argparse.Namespace, run_id: str) -> list[Cell]:
    cells = {name: Cell(target.name, name) for name in (SEND, SEND_BOTO3, END_TO_END)}
    endpoint = target.endpoint
    setup = BlockingSqs(endpoint)
    boto3_client = sqs_client(endpoint, read_timeout=60)
    try:
        for round_number in range(args.rounds):
            prefix = f"{run_id}-r{round_number}"
            phases: dict[str, Callable[..., Timings]] = {
                SEND: functools.partial(time_sends, setup, prefix=f"{prefix}-s",
                                        warmup=args.warmup, count=args.messages),
                SEND_BOTO3: functools.partial(time_sends, boto3_client, prefix=f"{prefix}-b",
                                              warmup=args.warmup, count=args.messages,
                                              error_types=(BotoCoreError, ClientError)),
                END_TO_END: functools.partial(time_end_to_end, endpoint, prefix=f"{prefix}-e",
                                              warmup=args.warmup, count=args.messages,
                                              settle_seconds=args.settle_ms / 1000),
            }
            if not args.boto3:
                del phases[SEND_BOTO3]
            for name, phase in phases.items():
                url = setup.create_queue(f"lat-{prefix}-{QUEUE_KEYS[name]}")
                timings = phase(queue_url=url)
                drain(endpoint, url, timings.ledger)
                cells[name].add(timings)
                print(f"   {target.name} round {round_number + 1} {name}: p50 "
                      f"{cells[name].round_p50s[-1]:.2f} ms, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
    finally:
        setup.close()
    return [cell for cell in cells.values() if cell.seconds or cell.errors]


def table_lines(cells: list[Cell]) -> list[str]:
    lines = [
        "| measurement | server | p50 ms (rounds' p50s) | p90 ms | p99 ms | max ms | "
        "client CPU µs/call | timed calls | sent / received | **lost** | "
        "**early duplicates** | **after delete** | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for measurement in (SEND, SEND_BOTO3, END_TO_END):
        for cell in (c for c in cells if c.measurement == measurement):
            verdict = cell.verdict
            p50 = (f"{cell.ms(0.5):.2f} ({min(cell.round_p50s):.2f}–"
                   f"{max(cell.round_p50s):.2f})")
            if not cell.clean:
                p50 = f"~~{p50}~~ **not a result**"
            cpu = (f"{cell.client_cpu_seconds * 1e6 / len(cell.seconds):.0f}"
                   if measurement != END_TO_END and cell.seconds else "—")
            lines.append("| " + " | ".join([
                measurement, cell.server, p50, f"{cell.ms(0.9):.2f}", f"{cell.ms(0.99):.2f}",
                f"{max(cell.seconds, default=0) * 1000:.2f}", cpu, f"{len(cell.seconds):,}",
                f"{verdict.sent:,} / {verdict.received:,}", f"**{len(verdict.lost)}**",
                f"**{verdict.early_duplicates}**", f"**{verdict.deliveries_after_delete}**",
                str(cell.errors + cell.missed),
            ]) + " |")
    return lines


def findings(cells: list[Cell]) -> list[str]:
    """Target verdicts for cqs, and what boto3 adds to a send on each server."""
    by_key = {(c.server, c.measurement): c for c in cells}
    lines = []
    for (server, measurement), cell in by_key.items():
        if server.startswith("cqs") and measurement in TARGETS_MS:
            target, p50 = TARGETS_MS[measurement], cell.ms(0.5)
            met = "meets" if p50 <= target and cell.clean else "misses"
            lines.append(f"- {server}, {measurement}: p50 {p50:.2f} ms {met} issue 30's "
                         f"target of ≤ {target:g} ms.")
    for (server, measurement), cell in by_key.items():
        raw = by_key.get((server, SEND))
        if measurement == SEND_BOTO3 and raw and raw.seconds:
            extra = cell.ms(0.5) - raw.ms(0.5)
            cpu = (cell.client_cpu_seconds / len(cell.seconds)
                   - raw.client_cpu_seconds / len(raw.seconds)) * 1000
            lines.append(f"- {server}: boto3 adds {extra:.2f} ms to the send p50 and "
                         f"{cpu:.2f} ms of client CPU per call over the raw client.")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default=DEFAULT_SERVERS,
                        help=f"comma-separated, in order, some of {','.join(SERVERS)}")
    parser.add_argument("--messages", type=int, default=2000, help="timed calls per round")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per server")
    parser.add_argument("--settle-ms", type=float, default=5.0,
                        help="end to end: how long the consumer's long poll waits before "
                        "the next send")
    parser.add_argument("--no-boto3", dest="boto3", action="store_false",
                        help="leave out the boto3 send measurement")
    parser.add_argument("--localstack-python", type=Path, default=servers.LOCALSTACK_PYTHON,
                        help="LocalStack's interpreter (default: the one "
                        "benchmarks/install_localstack puts under benchmarks/.peers)")
    parser.add_argument("--cqs-commitlog", choices=EMBEDDED_COMMITLOG_SYNC_MODES,
                        help="how cqs's embedded Cassandra syncs its commit log (default: as "
                        "./scripts/serve's does, the settings' default)")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    names = servers.chosen_servers(parser, args, SERVERS)

    started = time.monotonic()
    run_id = uuid.uuid4().hex[:8]
    cells: list[Cell] = []
    descriptions: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cqs-latency-") as work:
        for name in names:
            print(f"== {name} (load {os.getloadavg()[0]:.1f})", flush=True)
            with servers.started(name, Path(work), args.localstack_python,
                                 args.cqs_commitlog) as target:
                cells += measure_server(target, args, run_id)
                descriptions.append(f"- {target.name}: {target.description}")
    command = " ".join([
        "python benchmarks/unloaded_latency.py",
        *([f"--servers {args.servers}"] if args.servers != DEFAULT_SERVERS else []),
        f"--messages {args.messages}", f"--warmup {args.warmup}", f"--rounds {args.rounds}",
        f"--settle-ms {args.settle_ms:g}", *([] if args.boto3 else ["--no-boto3"]),
        *([f"--cqs-commitlog {args.cqs_commitlog}"] if args.cqs_commitlog else []),
    ])
    text = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} at commit {git_commit()} on "
        f"{system_summary()}, the servers one after another, "
        f"{args.rounds} rounds each of {args.messages:,} timed calls after {args.warmup} "
        f"untimed ones per measurement. It took {(time.monotonic() - started) / 60:.1f} "
        f"minutes; {load_average_span()}. Command: `{command}`.",
        "",
        *descriptions,
        "",
        *table_lines(cells),
        "",
        *findings(cells),
    ])
    print(text)
    if args.write_docs:
        SECTION.write(text)
    failed = [cell for cell in cells if not cell.clean]
    for cell in failed:
        print(f"NOT A RESULT: {cell.server}, {cell.measurement}: lost "
              f"{len(cell.verdict.lost)}, early {cell.verdict.early_duplicates}, after delete "
              f"{cell.verdict.deliveries_after_delete}, missed {cell.missed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
