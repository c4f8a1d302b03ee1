"""The CQS paper's load test against one `cqs serve`, beside the paper's own table.

The CQS paper (seed 004, "Performance") measured 10 queues with 2 senders and 2 receivers
per queue and 45 ms of simulated processing per received message, at send goals of 10,
50, 75, 100, 250, 500 and 1,000 messages per queue per second, on 2 API servers and an
8-node Cassandra ring. This script runs the same shape against one `cqs serve` process over
an embedded Redis and an embedded Cassandra (or `--endpoint`): for each goal, 10 fresh
queues, `--seconds` of open-loop, rate-paced SendMessage calls, receivers polling with
ReceiveMessage and deleting each message with DeleteMessage after its processing
(benchmarks/harness/paper_clients.py, in `--client-processes` asyncio processes), then a drain
until every message sent was deleted.

Per goal it reports the paper's columns (messages sent per second, empty-receive
percentage, API calls per second, average, median, p90, p95 and max latency from send to
first receive) and what the paper did not: how far the sent rate stayed below the goal,
the server's CPU (API process, Redis, Cassandra JVM) over the send window, and every
message id's verdict (benchmarks/harness/delivery_ledger.py): sent, received, lost, early
duplicates (before the visibility timeout) and deliveries after delete. A goal whose
messages were lost or delivered early is "not a result" and the script exits 1.
`--write-docs` replaces the section of docs/performance.md between its markers.

    python benchmarks/paper_load.py --write-docs
    python benchmarks/paper_load.py --goals 10,100 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness import peer_servers as servers  # noqa: E402
from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict, percentile  # noqa: E402
from benchmarks.harness.paper_clients import LoadPlan, ShareResult, run_share  # noqa: E402
from benchmarks.harness.peer_servers import Target  # noqa: E402
from benchmarks.harness.report import DocSection, command_line, host_lines  # noqa: E402
from benchmarks.harness.sqs_wire import count_and_delete_queues, create_queues  # noqa: E402

SECTION = DocSection(ROOT / "docs" / "performance.md", "paper_load", "Performance")
DEFAULT_GOALS = "10,50,75,100,250,500,1000"
START_DELAY_SECONDS = 3.0  # the client processes are told to start this far ahead

# The paper's table (seed 004): goal -> (sent/s, empty %, ops/node/s, avg, median, p95,
# p90, max ms), on 2 API servers and 8 Cassandra nodes, all VMs.
PAPER = {
    10: (97, 95, 1156, 3, 2, 8, 4, 5252),
    50: (420, 77, 1324, 10, 2, 22, 14, 5379),
    75: (528, 65, 1299, 18, 3, 35, 19, 5406),
    100: (559, 55, 1170, 26, 4, 50, 25, 5163),
    250: (706, 29, 1195, 38, 12, 160, 67, 5060),
    500: (775, 16, 1233, 40, 13, 150, 71, 5020),
    1000: (718, 11, 1127, 47, 14, 150, 81, 5458),
}


@dataclass
class GoalResult:
    goal: int  # messages per queue per second
    queues: int
    start_at: float  # wall clock: the send window opened
    seconds: float
    shares: list[ShareResult]
    ledger: DeliveryLedger
    verdict: Verdict
    cpu: dict[str, float]  # part -> CPU seconds over the send window
    left_in_queues: int

    @property
    def clean(self) -> bool:
        return (self.verdict.clean and all(share.drained for share in self.shares)
                and self.left_in_queues == 0)

    def total(self, field: str) -> float:
        return float(sum(getattr(share, field) for share in self.shares))

    def sent_per_second(self) -> float:
        """Sends acknowledged inside the send window, per second of it."""
        window_end = self.start_at + self.seconds
        inside = sum(1 for a in self.ledger.acknowledged if a.answered_at < window_end)
        return inside / self.seconds

    def empty_percent(self) -> float:
        receives = self.total("receives_in_window")
        return 100 * self.total("empty_in_window") / receives if receives else 0.0

    def problems(self) -> str:
        found = []
        if self.verdict.lost:
            found.append(f"{len(self.verdict.lost)} lost")
        if self.verdict.early_duplicates:
            found.append(f"{self.verdict.early_duplicates} early duplicates")
        if self.verdict.deliveries_after_delete:
            found.append(f"{self.verdict.deliveries_after_delete} deliveries after delete")
        if not all(share.drained for share in self.shares):
            found.append("not drained within the bound")
        if self.left_in_queues:
            found.append(f"{self.left_in_queues} left in the queues")
        return ", ".join(found) or "none"


def run_goal(target: Target, pool: ProcessPoolExecutor, goal: int, seconds: float,
             args: argparse.Namespace) -> GoalResult:
    run = uuid.uuid4().hex[:6]
    names = [f"paper-{run}-g{goal}-q{n}" for n in range(args.queues)]
    urls = asyncio.run(create_queues(target.endpoint, names, args.visibility_seconds))
    start_at = time.time() + START_DELAY_SECONDS
    template = LoadPlan(
        (), goal, args.senders, args.receivers, start_at, seconds, args.drain_seconds,
        args.processing_ms / 1000, args.receive_max, args.wait_seconds,
        args.visibility_seconds, args.in_flight, args.processing_slots, args.body_bytes, run,
    )
    processes = min(args.client_processes, len(urls))
    futures = [
        pool.submit(run_share, target.endpoint,
                    replace(template, queue_urls=tuple(urls[n::processes])))
        for n in range(processes)
    ]
    time.sleep(max(0.0, start_at - time.time()))
    before = servers.cpu_by_part(target)
    time.sleep(max(0.0, start_at + seconds - time.time()))
    after = servers.cpu_by_part(target)
    shares = [future.result() for future in futures]
    ledger = DeliveryLedger()
    for share in shares:
        ledger.absorb(share.ledger)
    left = asyncio.run(count_and_delete_queues(target.endpoint, urls))
    return GoalResult(goal, len(urls), start_at, seconds, shares, ledger, ledger.verdict(),
                      {part: after[part] - before[part] for part in after}, left)


@contextlib.contextmanager
def server(endpoint: str | None, work: Path) -> Iterator[Target]:
    if endpoint:
        yield Target("cqs", endpoint, f"the server at `{endpoint}`", {})
        return
    with servers.cqs(work) as target:
        yield target


def latency_cells(result: GoalResult) -> list[str]:
    ms = [seconds * 1000 for seconds in result.ledger.end_to_end_seconds()]
    if not ms:
        return ["—"] * 5
    return [f"{statistics.fmean(ms):,.0f}", f"{percentile(ms, 0.5):,.0f}",
            f"{percentile(ms, 0.9):,.0f}", f"{percentile(ms, 0.95):,.0f}",
            f"{max(ms):,.0f}"]


def send_call_cell(result: GoalResult) -> str:
    ms = [seconds * 1000 for seconds in result.ledger.durations.get("SendMessage", [])]
    return f"{percentile(ms, 0.5):,.0f} / {percentile(ms, 0.95):,.0f}" if ms else "—"


def table_lines(results: list[GoalResult]) -> list[str]:
    lines = [
        "| goal msg/queue/s | who | msg sent/s (goal) | sent ÷ goal | empty receives | "
        "API calls/s per node | avg ms | median ms | p90 ms | p95 ms | max ms | "
        "SendMessage call ms (median / p95) | "
        "server CPU, % of one core (API / Redis / Cassandra) | sent / received | **lost** | "
        "**early duplicates** | **after delete** | errors |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | "
        "---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        goal_total = result.goal * result.queues
        paper = PAPER.get(result.goal)
        if paper:
            sent, empty, ops, avg, median, p95, p90, peak = paper
            lines.append(
                f"| {result.goal:,} | CQS paper | {sent:,} ({result.goal * 10:,}) | "
                f"{100 * sent / (result.goal * 10):.0f} % | {empty} % | {ops:,} | {avg} | "
                f"{median} | {p90} | {p95} | {peak:,} | — | — | — | — | — | — | — |"
            )
        rate = result.sent_per_second()
        rate_text = f"{rate:,.0f} ({goal_total:,})"
        if not result.clean:
            rate_text = f"~~{rate_text}~~ **not a result: {result.problems()}**"
        verdict = result.verdict
        cpu = " / ".join(f"{100 * used / result.seconds:.0f}" for used in result.cpu.values())
        lines.append("| " + " | ".join([
            f"{result.goal:,}", "cqs", rate_text, f"{100 * rate / goal_total:.0f} %",
            f"{result.empty_percent():.0f} %",
            f"{result.total('calls_in_window') / result.seconds:,.0f}",
            *latency_cells(result), send_call_cell(result), cpu or "—",
            f"{verdict.sent:,} / {verdict.received:,}", f"**{len(verdict.lost)}**",
            f"**{verdict.early_duplicates}**", f"**{verdict.deliveries_after_delete}**",
            str(sum(result.ledger.errors.values())),
        ]) + " |")
    return lines


def report(results: list[GoalResult], args: argparse.Namespace, target: Target,
           minutes: float, command: str) -> str:
    missed = {r.goal: r.total("missed_slots") / max(1.0, r.total("send_slots"))
              for r in results}
    client_cpu = {r.goal: r.total("client_cpu_seconds") for r in results}
    return "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')}; it took {minutes:.1f} minutes. "
        f"Command: `{command}`.",
        "",
        *host_lines(),
        f"- server: {target.description}; the {args.client_processes} client processes "
        "(asyncio on uvloop, aiohttp, JSON protocol) on the same 2 CPUs",
        f"- per goal: {args.queues} fresh queues, {args.senders} senders and "
        f"{args.receivers} receivers per queue, {args.seconds:g} s of sending "
        f"(open loop, SendMessage, {args.body_bytes}-byte bodies, at most {args.in_flight} "
        f"sends open per sender), receivers short-polling (ReceiveMessage of up to "
        f"{args.receive_max}, WaitTimeSeconds {args.wait_seconds}), {args.processing_ms:g} ms "
        f"of processing per message (up to {args.processing_slots} at once per receiver), "
        "then DeleteMessage; receivers go on after the send window until every message is "
        "deleted",
        "",
        *table_lines(results),
        "",
        "CQS paper rows: its table as published (the paper gives no loss or duplicate counts "
        "for this test; its long-run rates, 1 duplicate per million and 1 loss per 2 million, "
        "are the next section's subject) (2 API servers behind a load balancer, an "
        "8-node Cassandra ring, all VMs, 2012). Its \"Msg Sent / Sec\" is taken as the total "
        "over the 10 queues (97 at a goal of 10 per queue), its \"Total Ops / Node / Sec\" "
        "as API calls per second per API server; it does not say what its latency measures. "
        "cqs rows: msg sent/s counts sends answered within the send window; empty receives "
        "and API calls/s (SendMessage, ReceiveMessage, DeleteMessage, all on one node) are "
        "over the same window; latency is send requested → first ReceiveMessage answer "
        "carrying the message, for every message sent, drain included; the SendMessage call "
        "alone is beside it (request sent → answer); server CPU is user + "
        "system time over the send window from /proc. Every message id checked: lost = "
        "acknowledged but never received; early duplicate = delivered again before the "
        f"visibility timeout ({args.visibility_seconds} s) of its previous delivery ran out; "
        "after delete = delivered again after its delete was answered.",
        "",
        "Send slots missed because all of a sender's sends were still open (the server fell "
        "behind the goal): " + ", ".join(
            f"goal {goal}: {100 * share:.0f} %" for goal, share in missed.items()) + ". "
        "Client processes' CPU over each goal, in seconds: " + ", ".join(
            f"{goal}: {seconds:.0f}" for goal, seconds in client_cpu.items()) + ".",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--goals", default=DEFAULT_GOALS,
                        help="send goals, messages per queue per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="send window per goal")
    parser.add_argument("--warmup-seconds", type=float, default=5.0,
                        help="an unreported first round at the lowest goal")
    parser.add_argument("--queues", type=int, default=10)
    parser.add_argument("--senders", type=int, default=2, help="per queue")
    parser.add_argument("--receivers", type=int, default=2, help="per queue")
    parser.add_argument("--processing-ms", type=float, default=45.0)
    parser.add_argument("--processing-slots", type=int, default=10,
                        help="messages one receiver processes at once")
    parser.add_argument("--receive-max", type=int, default=1, help="MaxNumberOfMessages")
    parser.add_argument("--wait-seconds", type=int, default=0, help="WaitTimeSeconds")
    parser.add_argument("--visibility-seconds", type=int, default=30)
    parser.add_argument("--in-flight", type=int, default=16, help="open sends per sender")
    parser.add_argument("--body-bytes", type=int, default=100)
    parser.add_argument("--drain-seconds", type=float, default=120.0)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--endpoint", help="a running server instead of an embedded one")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    goals = [int(goal) for goal in args.goals.split(",") if goal.strip()]

    started = time.monotonic()
    results: list[GoalResult] = []
    context = multiprocessing.get_context("spawn")
    with (tempfile.TemporaryDirectory(prefix="cqs-paper-") as work,
          server(args.endpoint, Path(work)) as target,
          ProcessPoolExecutor(args.client_processes, mp_context=context) as pool):
        if args.warmup_seconds > 0:
            run_goal(target, pool, min(goals), args.warmup_seconds, args)
        for goal in goals:
            result = run_goal(target, pool, goal, args.seconds, args)
            results.append(result)
            print(f"goal {goal}: {result.sent_per_second():,.0f} msg/s sent, "
                  f"{result.empty_percent():.0f} % empty, problems: {result.problems()}",
                  flush=True)
    minutes = (time.monotonic() - started) / 60
    command = command_line("paper_load.py")
    text = report(results, args, target, minutes, command)
    print(text)
    if args.write_docs:
        SECTION.write(text)
    failed = [result for result in results if not result.clean]
    for result in failed:
        print(f"NOT A RESULT: goal {result.goal}: {result.problems()}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
