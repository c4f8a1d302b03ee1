"""cqs side by side with its peers (the floor, LocalStack, ElasticMQ, moto): throughput, server
CPU per message and call latency.

One run measures, one after another on the same machine and with the same clients and
parameters, the servers of `--servers` (default: floor, localstack, elasticmq, moto, cqs,
cqs2):

- floor: benchmarks/floor_server.py, a minimal in-memory aiohttp SQS server (the cost floor
  of a Python SQS server);
- localstack: LocalStack in host mode, no Docker (install it with
  benchmarks/install_localstack; `--localstack-python` points elsewhere);
- elasticmq: ElasticMQ, a JVM server in memory, from its Maven Central jars with a generated
  elasticmq.conf (install it with benchmarks/install_elasticmq);
- moto: moto's server mode (install it with benchmarks/install_moto);
- cqs: one `cqs serve` process; cqs2: `cqs serve --workers 2`; each over a fresh embedded
  Redis and a fresh embedded Cassandra, every message written to Cassandra before the answer.
A peer that is not installed is a usage error that names its installer.

Each server gets sqs_throughput.py's scenarios (`measure`: boto3 client processes, every
message id checked by a DeliveryLedger, each queue drained and checked after its last
scenario), by default send, batch and mixed: send (SendMessage), send batch
(SendMessageBatch of 10), receive + delete batch (ReceiveMessage of 10 then
DeleteMessageBatch, until the queue the batch senders filled is empty) and mixed
(producers sending batches and consumers receiving + deleting at once; with `--messages`
the consumers stop once every message is through, so the figure is end to end).

For each scenario and server the table gives messages per second (over the clients' active
window: first call sent to last message moved), the server's CPU milliseconds per message
(its processes and their children, from /proc, over the whole scenario; for cqs split
into the API process(es), Redis and the Cassandra JVM), each as a ratio to LocalStack's
and to the floor's (CPU also to ElasticMQ's), the p50 and p99 latency of the clients'
calls that moved messages, and the queue's verdict: sent, received, lost, early
duplicates and deliveries after delete. A row whose queue lost a message or delivered one
unexpectedly, or whose server's untimed warm-up did, is "not a result" (struck out, no
ratios) and the script exits 1. `--write-docs`
regenerates the section of docs/performance.md between its markers.

    python benchmarks/peer_throughput.py --messages 20000 --seconds 120 --write-docs
    python benchmarks/peer_throughput.py --messages 500 --clients 2 --servers floor,localstack
    python benchmarks/peer_throughput.py --messages 300 --clients 2 --servers floor,elasticmq
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqs_throughput import (  # noqa: E402
    DOC,
    VISIBILITY_SECONDS,
    Options,
    QueueCheck,
    Row,
    Tally,
    add_check_arguments,
    check_options_command,
    measure,
    options_from,
    percentile,
)

from benchmarks.harness import peer_servers as servers  # noqa: E402
from benchmarks.harness.peer_servers import Target  # noqa: E402
from benchmarks.harness.report import DocSection, load_average_span, system_summary  # noqa: E402
from cqs.settings import EMBEDDED_COMMITLOG_SYNC_MODES  # noqa: E402

SECTION = DocSection(DOC, "peer_throughput", "Performance")
SERVERS = tuple(servers.STARTERS)
DEFAULT_SERVERS = "floor,localstack,elasticmq,moto,cqs,cqs2"
DEFAULT_SCENARIOS = "send,batch,mixed"  # the floor has no FIFO queues
PHASES = {  # measure's phase -> the table's scenario
    "send": "send (SendMessage)",
    "send-batch": "send batch (SendMessageBatch 10)",
    "receive-delete": "receive (10) + delete batch",
    "mixed": "mixed, end to end (batch producers + consumers)",
}


class CpuMeter:
    """The CPU time of a target's parts over each phase `measure` runs."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.phases: dict[str, dict[str, float]] = {}

    @contextlib.contextmanager
    def around(self, phase: str) -> Iterator[None]:
        before = servers.cpu_by_part(self.target)
        try:
            yield
        finally:
            after = servers.cpu_by_part(self.target)
            self.phases[phase] = {part: after[part] - before[part] for part in after}


@dataclass
class Cell:
    """One server in one scenario."""

    server: str
    phase: str
    messages: int
    seconds: float
    cpu: dict[str, float]  # part -> CPU seconds over the phase
    check: QueueCheck | None
    errors: int
    parts_shown: bool  # more than one part (cqs): the split goes in the table
    latencies_ms: list[float] = field(default_factory=list)  # the phase's calls that moved messages
    warmup_problems: str = ""  # what the server's warm-up queues lost or duplicated

    @property
    def clean(self) -> bool:
        return self.check is not None and self.check.clean and not self.warmup_problems

    def problems(self) -> str:
        """Why this cell is not a result ("" when it is)."""
        found = [self.check.problems() if self.check else "its queue was not checked"]
        if self.warmup_problems:
            found.append(f"its warm-up: {self.warmup_problems}")
        return "; ".join(problem for problem in found if problem)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def cpu_ms(self, part: str | None = None) -> float:
        used = sum(self.cpu.values()) if part is None else self.cpu[part]
        return used * 1000 / self.messages if self.messages else 0.0

    def latency_ms(self, fraction: float) -> float:
        return percentile(self.latencies_ms, fraction)


@dataclass
class ServerRun:
    target: Target
    rows: list[Row]
    cpu: dict[str, dict[str, float]]
    seconds: float
    warmup_problems: str = ""
    cells: list[Cell] = field(default_factory=list)

    def __post_init__(self) -> None:
        for phase in PHASES:
            rows = [row for row in self.rows if row.phase == phase]
            if not rows:
                continue
            window = Tally()
            for row in rows:
                window.add(row.tally)
            # Mixed: the consumers' count, each message sent and deleted in the phase.
            messages = rows[-1].tally.messages
            self.cells.append(Cell(
                self.target.name, phase, messages, window.active_seconds,
                self.cpu.get(phase, {}), rows[0].check, window.errors,
                len(self.target.parts) > 1, window.moved_latencies_ms, self.warmup_problems,
            ))


def ratio(value: float, reference: Cell | None, cell: Cell, of: Callable[[Cell], float]) -> str:
    if reference is None or reference is cell or not reference.clean or not cell.clean:
        return "—"
    base = of(reference)
    return f"{value / base:.2f}×" if base else "—"


def table_lines(runs: list[ServerRun]) -> list[str]:
    lines = [
        "| scenario | server | msg/s | msg/s × LocalStack | msg/s × floor | server CPU ms/msg | "
        "CPU × LocalStack | CPU × ElasticMQ | CPU × floor | CPU ms/msg by part | "
        "p50 / p99 ms of a call | messages | queue: sent / received | **lost** | "
        "**early duplicates** | **after delete** | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- | --- |",
    ]
    for phase, label in PHASES.items():
        cells = [cell for run in runs for cell in run.cells if cell.phase == phase]
        by_name = {cell.server: cell for cell in cells}
        localstack, elasticmq = by_name.get("LocalStack"), by_name.get("ElasticMQ")
        floor = by_name.get("floor")
        for cell in cells:
            rate = f"{cell.rate:,.0f}"
            if not cell.clean:
                rate = f"~~{rate}~~ **not a result: {cell.problems()}**"
            cpu = cell.cpu_ms()
            split = " / ".join(f"{part} {cell.cpu_ms(part):.2f}" for part in cell.cpu)
            verdict = cell.check.verdict if cell.check else None
            counts = (
                [f"{verdict.sent:,} / {verdict.received:,}", f"**{len(verdict.lost)}**",
                 f"**{verdict.early_duplicates}**", f"**{verdict.deliveries_after_delete}**"]
                if verdict else ["not checked"] * 4
            )
            lines.append("| " + " | ".join([
                label, cell.server, rate,
                ratio(cell.rate, localstack, cell, lambda c: c.rate),
                ratio(cell.rate, floor, cell, lambda c: c.rate),
                f"{cpu:.2f}",
                ratio(cpu, localstack, cell, lambda c: c.cpu_ms()),
                ratio(cpu, elasticmq, cell, lambda c: c.cpu_ms()),
                ratio(cpu, floor, cell, lambda c: c.cpu_ms()),
                split if cell.parts_shown else "—",
                f"{cell.latency_ms(0.50):.2f} / {cell.latency_ms(0.99):.2f}",
                f"{cell.messages:,}", *counts, str(cell.errors),
            ]) + " |")
    return lines


def report(runs: list[ServerRun], heading: str) -> str:
    failed = [cell for run in runs for cell in run.cells if not cell.clean]
    return "\n".join([
        heading,
        "",
        *table_lines(runs),
        "",
        "msg/s: messages over the clients' active window (first call sent to last message "
        "moved; the client processes' start-up is left out). Server CPU: user + system time "
        "of the server's processes and their children, read from /proc before and after the "
        "scenario (start-up and the closing empty receives included), per message of the "
        "scenario; for cqs the API process(es), Redis and the Cassandra JVM, each with its "
        "own line in the split. × LocalStack, × ElasticMQ and × floor: this row's figure "
        "divided by that server's in the same scenario (for msg/s higher is better, for CPU "
        "lower is better). p50 / p99 of a call: from request sent to answer read, under "
        "this load, over the scenario's calls that moved messages (a SendMessage, a "
        "SendMessageBatch, or a ReceiveMessage together with the DeleteMessageBatch of what it "
        "received; in mixed, the producers' and the consumers' calls together); an empty "
        "receive, which waits out its long poll, is left out. "
        "Mixed: the messages the consumers received and deleted; the producers sent the same "
        "messages in the same phase, so the CPU is per message sent, received and deleted.",
        "",
        "Every message id checked (benchmarks/harness/delivery_ledger.py): unique bodies; after the "
        "last scenario on a queue it is drained (not timed) until every acknowledged message "
        "was received, and the rows on one queue (send batch and receive share one) share its "
        "counts. Early duplicate: a repeat delivery answered before the previous delivery's "
        f"request was sent plus its visibility timeout ({VISIBILITY_SECONDS} s). After delete: "
        "a delivery asked for after a successful delete of the same message was answered.",
        *([
            "",
            "**Not a result** (messages lost or delivered unexpectedly): "
            + "; ".join(f"{cell.server}, {PHASES[cell.phase]}: {cell.problems()}"
                        for cell in failed) + ".",
        ] if failed else []),
    ])


def warm_up(endpoint: str, seconds: float, clients: int, messages: int) -> str:
    """Untimed runs of the send and batch scenarios on queues of their own, so every
    server (the JIT of the JVMs, Cassandra's and ElasticMQ's, most of all) is measured
    warm; their queues are still checked. Returns what they lost or duplicated ("" when
    nothing): a server whose warm-up did has no result in this run, and the run goes on to
    the next server."""
    print(f"   warm-up: {messages:,} messages through send and batch (untimed)", flush=True)
    rows = measure(endpoint, seconds, clients, Options(groups=("send", "batch"), messages=messages))
    problems = {row.check.problems() if row.check else "a queue was not checked"
                for row in rows if row.check is None or not row.check.clean}
    return "; ".join(sorted(problems))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default=DEFAULT_SERVERS,
                        help=f"comma-separated, in order, some of {','.join(SERVERS)} "
                        f"(default {DEFAULT_SERVERS})")
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="at most this long per scenario (a send stops at --messages)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--localstack-python", type=Path, default=servers.LOCALSTACK_PYTHON)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--cqs-commitlog", choices=EMBEDDED_COMMITLOG_SYNC_MODES,
                        help="how cqs's embedded Cassandra syncs its commit log (default: as "
                        "./scripts/serve's does, the settings' default)")
    parser.add_argument("--warmup-messages", type=int, default=2000,
                        help="untimed send and batch scenarios of this many messages on each "
                        "server before its measured ones (0: none)")
    add_check_arguments(parser)
    parser.set_defaults(scenarios=DEFAULT_SCENARIOS, messages=20_000)
    args = parser.parse_args()
    options = options_from(args, parser)
    names = servers.chosen_servers(parser, args, SERVERS)

    started = time.monotonic()
    runs: list[ServerRun] = []
    with tempfile.TemporaryDirectory(prefix="cqs-peers-") as work:
        for name in names:
            server_started = time.monotonic()
            print(f"== {name}", flush=True)
            with servers.started(name, Path(work), args.localstack_python,
                                 args.cqs_commitlog) as target:
                warmup_problems = ""
                if args.warmup_messages > 0:
                    warmup_problems = warm_up(target.endpoint, args.seconds, args.clients,
                                              args.warmup_messages)
                meter = CpuMeter(target)
                rows = measure(target.endpoint, args.seconds, args.clients, options,
                               meter.around)
            runs.append(ServerRun(target, rows, meter.phases, time.monotonic() - server_started,
                                  warmup_problems))
            print(f"== {name}: {runs[-1].seconds:.0f} s with start and stop", flush=True)
    minutes = (time.monotonic() - started) / 60
    command = " ".join([
        "python benchmarks/peer_throughput.py",
        *([f"--servers {args.servers}"] if args.servers != DEFAULT_SERVERS else []),
        *([f"--warmup-messages {args.warmup_messages}"] if args.warmup_messages != 2000 else []),
        *([f"--cqs-commitlog {args.cqs_commitlog}"] if args.cqs_commitlog else []),
        f"--seconds {args.seconds:g}", f"--clients {args.clients}",
        *(option for option in check_options_command(args)
          if option != f"--scenarios {DEFAULT_SCENARIOS}"),
    ])
    text = report(runs, "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {system_summary()}. One run, the servers "
        f"one after another on the same machine, each with the same {args.clients} boto3 "
        "client processes (JSON protocol, one request in flight each, on the same 2 CPUs as "
        "the servers) and at most "
        f"{args.messages:,} messages per scenario, after an untimed warm-up of "
        f"{args.warmup_messages:,} messages through the send and batch scenarios on each "
        "server (so the JVMs, Cassandra's and ElasticMQ's, are measured after their JIT "
        "warmed up). It took "
        f"{minutes:.1f} minutes; {load_average_span()}. Command: `{command}`.",
        "",
        *[f"- {run.target.name}: {run.target.description}" for run in runs],
    ]))
    print(text)
    for run in runs:
        for cell in run.cells:
            if not cell.clean:
                print(f"NOT A RESULT: {cell.server}, {PHASES[cell.phase]}: {cell.problems()}",
                      file=sys.stderr)
    if args.write_docs:
        SECTION.write(text)
    return 0 if all(cell.clean for run in runs for cell in run.cells) else 1


if __name__ == "__main__":
    sys.exit(main())
