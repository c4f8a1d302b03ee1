"""Idle long polls: what 10,000 waiting ReceiveMessage calls cost a server, and do they wake.

1. Starts an embedded Redis, an embedded Cassandra and `cqs serve` (or uses `--endpoint`),
   creates `--queues` queues (300) and reads the server's resident memory (VmRSS of its
   process and its children, from /proc; `--server-pid` with `--endpoint`).
2. Opens `--polls` concurrent long polls (10,000; WaitTimeSeconds 20, MaxNumberOfMessages 1)
   from `--processes` client processes, poll w on queue w mod queues, started at
   `--polls-per-second`, and reads the memory again while they all wait: memory per
   waiting poll.
3. Sends each queue exactly as many messages as it has waiters (SendMessageBatch) and
   checks that every waiter wakes with exactly one message (a waiter whose poll ran out
   its wait empty before the sends polls again, as a consumer does): no message given to two
   waiters, none lost (what no waiter got is looked for in the queues afterwards), how many
   waiters ran out their wait empty or failed, and the wake-up latency (send request to
   the waiter's answer) percentiles.

Each poll is one aiohttp request on an event loop (benchmarks/harness/sqs_wire.py), not a boto3
call: 10,000 blocking boto3 long polls would need 10,000 threads. Bounded: the client
processes give up on a poll WaitTimeSeconds + 40 s after the ramp, so a server that never
answers shows as "still waiting at the bound" rather than a hang. Exits non-zero unless
every waiter got exactly one message and none was lost or duplicated. `--write-docs`
writes the figures between the idle-long-polls markers of docs/reliability.md.

    python benchmarks/idle_long_polls.py --write-docs
    python benchmarks/idle_long_polls.py --polls 500 --queues 20 --processes 2
    python benchmarks/idle_long_polls.py --endpoint http://127.0.0.1:9324 --server-pid 1234

Imports the launcher from benchmarks.harness.servers and the shared wire client; never the service.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import multiprocessing
import multiprocessing.queues
import queue
import shlex
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from benchmarks.harness.clients import raise_open_file_limit  # noqa: E402
from benchmarks.harness.delivery_ledger import percentile  # noqa: E402
from benchmarks.harness.report import host_lines, write_section  # noqa: E402
from benchmarks.harness.servers import process_tree, target_server  # noqa: E402
from benchmarks.harness.sqs_wire import (  # noqa: E402
    CALL_ERRORS,
    SqsJsonClient,
    client_session,
    error_code,
    run_client,
)

DOC = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- idle-long-polls:begin -->"
END = "<!-- idle-long-polls:end -->"
VISIBILITY_SECONDS = 300  # longer than the run: a message a waiter got never comes back
SETTLE_SECONDS = 2.0  # after the last request left, before memory is read and sends begin
BOUND_SLACK_SECONDS = 40.0
STILL_WAITING = "still waiting at the bound"
first_poll: contextvars.ContextVar[bool] = contextvars.ContextVar("first_poll", default=False)


# --- the waiter processes (spawned; results travel as plain tuples) ---------------------------

# (waiter, queue url, last poll asked at, answered at, message ids, bodies, error code or
# None, (empty answers before, of which early))
WaitOutcome = tuple[
    int, str, float, float, tuple[str, ...], tuple[str, ...], str | None, tuple[int, int]
]


def waiter_process(
    index: int, endpoint: str, queue_urls: Sequence[str], waiters: Sequence[int],
    wait_seconds: int, ramp_seconds: float, opened: Any, outbox: multiprocessing.queues.Queue[Any],
    ready: Any, go: Any,
) -> None:
    run_client(wait_all(
        index, endpoint, queue_urls, waiters, wait_seconds, ramp_seconds, opened, outbox,
        ready, go,
    ))


async def wait_all(
    index: int, endpoint: str, queue_urls: Sequence[str], waiters: Sequence[int],
    wait_seconds: int, ramp_seconds: float, opened: Any, outbox: multiprocessing.queues.Queue[Any],
    ready: Any, go: Any,
) -> None:
    """One long poll per waiter; `opened[index]` counts the first polls whose headers left.
    The ramp starts when every client process is ready (`ready[index]`, then `go`): a
    process's start-up must not eat into the polls' wait on a slow machine."""

    async def headers_sent(*_: Any) -> None:
        if first_poll.get():  # the waiter's task context: polls asked again do not count
            opened[index] += 1

    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(headers_sent)
    outcomes: dict[int, WaitOutcome] = {}
    asked: dict[int, float] = {}
    empties = {waiter: (0, 0) for waiter in waiters}  # (empty answers, of which early)

    async def wait_once(client: SqsJsonClient, position: int, waiter: int) -> None:
        """Long-poll until a message comes, as a consumer does: a poll that ran out its
        wait empty (opened early in a long ramp, before the sends) asks again."""
        await asyncio.sleep(ramp_seconds * position / len(waiters))
        url = queue_urls[waiter % len(queue_urls)]
        first_poll.set(True)
        while True:
            asked[waiter] = time.time()
            try:
                messages = await client.receive_message(url, 1, wait_seconds, VISIBILITY_SECONDS)
            except CALL_ERRORS as exc:
                outcomes[waiter] = (waiter, url, asked[waiter], time.time(), (), (),
                                    error_code(exc), empties[waiter])
                return
            if messages:
                break
            first_poll.set(False)
            answered = time.time()
            empties[waiter] = (empties[waiter][0] + 1,
                               empties[waiter][1] + (answered - asked[waiter] < wait_seconds - 1))
        outcomes[waiter] = (
            waiter, url, asked[waiter], time.time(),
            tuple(m["MessageId"] for m in messages), tuple(m["Body"] for m in messages), None,
            empties[waiter],
        )

    async with client_session([trace]) as session:
        client = SqsJsonClient(session, endpoint)
        ready[index] = 1
        while not go.is_set():
            await asyncio.sleep(0.01)
        tasks = [asyncio.create_task(wait_once(client, n, w)) for n, w in enumerate(waiters)]
        _, pending = await asyncio.wait(
            tasks, timeout=ramp_seconds + wait_seconds + BOUND_SLACK_SECONDS
        )
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    for waiter in waiters:
        if waiter not in outcomes:
            url = queue_urls[waiter % len(queue_urls)]
            outcomes[waiter] = (waiter, url, asked.get(waiter, 0.0), time.time(), (), (),
                                STILL_WAITING, empties[waiter])
    outbox.put(("outcomes", index, list(outcomes.values())))


# --- memory ------------------------------------------------------------------------------------


def resident_kib(pid: int) -> int:
    """VmRSS of `pid` and its descendants, in KiB."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def resident_kib_settled(pid: int | None) -> int | None:
    """The largest of three readings 0.3 s apart (None without a pid)."""
    if pid is None:
        return None
    readings = []
    for _ in range(3):
        readings.append(resident_kib(pid))
        time.sleep(0.3)
    return max(readings)


# --- the run -----------------------------------------------------------------------------------


@dataclass
class IdleRun:
    polls: int
    queues: int
    processes: int
    ramp_seconds: float = 0.0
    opened: int = 0
    rss_before_kib: int | None = None
    rss_waiting_kib: int | None = None
    sent_at: dict[str, float] = field(default_factory=dict)  # acknowledged id -> send asked at
    send_errors: Counter[str] = field(default_factory=Counter)
    outcomes: list[WaitOutcome] = field(default_factory=list)
    left_in_queues: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    @property
    def kib_per_poll(self) -> float | None:
        if self.rss_before_kib is None or self.rss_waiting_kib is None:
            return None
        return (self.rss_waiting_kib - self.rss_before_kib) / self.polls


async def create_queues(endpoint: str, names: Sequence[str]) -> list[str]:
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)
        limit = asyncio.Semaphore(16)

        async def create(name: str) -> str:
            async with limit:
                return await client.create_queue(name)

        return list(await asyncio.gather(*(create(name) for name in names)))


async def send_one_per_waiter(endpoint: str, queue_urls: Sequence[str], run: IdleRun) -> None:
    """Queue q gets as many messages as waiters w with w mod queues == q."""
    tag = uuid.uuid4().hex[:8]
    waiters_per_queue = Counter(w % len(queue_urls) for w in range(run.polls))
    batches = [
        (queue_urls[q], [f"{tag}-{q}-{n}" for n in range(start, min(start + 10, count))])
        for q, count in waiters_per_queue.items()
        for start in range(0, count, 10)
    ]
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)
        limit = asyncio.Semaphore(32)

        async def send(url: str, bodies: list[str]) -> None:
            async with limit:
                asked = time.time()
                try:
                    stored, refused = await client.send_message_batch(url, bodies)
                except CALL_ERRORS as exc:
                    run.send_errors[error_code(exc)] += len(bodies)
                    return
                run.sent_at.update({message_id: asked for message_id in stored.values()})
                run.send_errors.update(refused.values())

        await asyncio.gather(*(send(url, bodies) for url, bodies in batches))


async def drain_and_delete(endpoint: str, queue_urls: Sequence[str]) -> set[str]:
    """Ids of the messages still visible in the queues; then the queues are deleted."""
    found: set[str] = set()
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)
        limit = asyncio.Semaphore(16)

        async def drain(url: str) -> None:
            async with limit:
                with contextlib.suppress(*CALL_ERRORS):
                    while messages := await client.receive_message(url, 10, 1, 60):
                        found.update(m["MessageId"] for m in messages)
                with contextlib.suppress(*CALL_ERRORS):
                    await client.delete_queue(url)

        await asyncio.gather(*(drain(url) for url in queue_urls))
    return found


def run_idle(endpoint: str, server_pid: int | None, args: argparse.Namespace) -> IdleRun:
    run = IdleRun(args.polls, args.queues, min(args.processes, args.polls))
    tag = uuid.uuid4().hex[:8]
    names = [f"idle-{tag}-{q}" for q in range(args.queues)]
    queue_urls = asyncio.run(create_queues(endpoint, names))
    time.sleep(SETTLE_SECONDS)
    run.rss_before_kib = resident_kib_settled(server_pid)

    context = multiprocessing.get_context("spawn")
    outbox = context.Queue()
    opened = context.RawArray("i", run.processes)
    ready = context.RawArray("i", run.processes)
    go = context.Event()
    ramp = args.polls / args.polls_per_second
    children = [
        context.Process(
            target=waiter_process, name=f"waiters-{index}", daemon=True,
            args=(index, endpoint, queue_urls, list(range(index, args.polls, run.processes)),
                  args.wait_seconds, ramp, opened, outbox, ready, go),
        )
        for index in range(run.processes)
    ]
    for child in children:
        child.start()
    started = time.monotonic()
    while sum(ready) < run.processes and time.monotonic() - started < 120:
        time.sleep(0.05)
    began = time.monotonic()
    go.set()
    while sum(opened) < args.polls and time.monotonic() - began < ramp + 60:
        time.sleep(0.1)
    run.opened = sum(opened)
    run.ramp_seconds = time.monotonic() - began
    print(f"{run.opened} of {args.polls} long polls sent in {run.ramp_seconds:.1f} s", flush=True)
    if run.opened < args.polls:
        run.problems.append(f"only {run.opened} of {args.polls} polls were sent within the ramp")
    time.sleep(SETTLE_SECONDS)
    run.rss_waiting_kib = resident_kib_settled(server_pid)

    asyncio.run(send_one_per_waiter(endpoint, queue_urls, run))
    print(f"sent {len(run.sent_at)} messages; waiting for the waiters", flush=True)
    reported = 0
    deadline = time.monotonic() + ramp + args.wait_seconds + BOUND_SLACK_SECONDS + 30
    while reported < run.processes and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            _, _, outcomes = outbox.get(timeout=0.5)
            run.outcomes.extend(outcomes)
            reported += 1
    if reported < run.processes:
        run.problems.append(f"only {reported} of {run.processes} client processes reported")
    for child in children:
        child.join(10)
        if child.is_alive():
            child.terminate()
            run.problems.append(f"{child.name} had to be terminated")
    run.left_in_queues = asyncio.run(drain_and_delete(endpoint, queue_urls))
    return run


# --- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Findings:
    polls: int
    woken_with_one: int
    woken_with_more: int
    empty_after_the_wait: int  # polls that ran out their wait before the sends (then asked again)
    empty_early: int  # answered empty more than a second before the wait ran out
    errors: Counter[str]
    given_twice: int  # messages delivered to more than one waiter (extra deliveries)
    lost: int  # acknowledged, no waiter got it, not in the queues afterwards
    visible_again: int  # given to a waiter, yet visible in its queue afterwards
    unacknowledged_delivered: int
    wake_up_ms: list[float]

    @property
    def passed(self) -> bool:
        """Every waiter woke with one message, none given twice, none lost."""
        return (self.woken_with_one == self.polls and self.given_twice == 0 and self.lost == 0
                and self.visible_again == 0)


def findings(run: IdleRun) -> Findings:
    deliveries: Counter[str] = Counter()
    with_one = with_more = empty_late = empty_early = 0
    errors: Counter[str] = Counter()
    wake_up: list[float] = []
    for _, _, _, answered, ids, _, error, (empties, early) in run.outcomes:
        empty_late += empties - early
        empty_early += early
        if error is not None:
            errors[error] += 1
            continue
        deliveries.update(ids)
        if len(ids) == 1:
            with_one += 1
            if ids[0] in run.sent_at:
                wake_up.append((answered - run.sent_at[ids[0]]) * 1000)
        elif len(ids) > 1:
            with_more += 1
    acknowledged = set(run.sent_at)
    return Findings(
        run.polls, with_one, with_more, empty_late, empty_early, errors,
        sum(n - 1 for n in deliveries.values() if n > 1),
        len(acknowledged - set(deliveries) - run.left_in_queues),
        len(set(deliveries) & run.left_in_queues),
        len(set(deliveries) - acknowledged),
        wake_up,
    )


def mib(kib: int | None) -> str:
    return "not measured" if kib is None else f"{kib / 1024:.0f}"


def report(run: IdleRun, found: Findings, args: argparse.Namespace, command: str,
           server: str) -> str:
    per_poll = run.kib_per_poll
    wake = found.wake_up_ms
    errors = ", ".join(f"{code} {n}" for code, n in sorted(found.errors.items())) or "0"
    send_errors = ", ".join(f"{code} {n}" for code, n in sorted(run.send_errors.items())) or "none"
    return "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} against {server}; {run.polls} long polls "
        f"(WaitTimeSeconds {args.wait_seconds}, MaxNumberOfMessages 1, one poll each) over "
        f"{run.queues} queues from {run.processes} client processes (asyncio over aiohttp, "
        f"AWS JSON 1.0), started at {args.polls_per_second:g} a second; then as many messages "
        "to each queue as it had waiters (SendMessageBatch). Server memory: VmRSS of the "
        "server process and its children. Everything on the same machine. "
        f"Command: `{command}`.",
        "",
        *host_lines(),
        "",
        "| long polls | queues | server RSS before MiB | RSS while waiting MiB | KiB per "
        "waiting poll | woken with one message | empty polls asked again | empty early | "
        "failed | **messages to two waiters** | **lost** | wake-up p50 / p90 / p99 / max ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {run.polls} | {run.queues} | {mib(run.rss_before_kib)} | {mib(run.rss_waiting_kib)} "
        f"| {'not measured' if per_poll is None else f'{per_poll:.1f}'} | "
        f"{found.woken_with_one} | {found.empty_after_the_wait} | {found.empty_early} | "
        f"{errors} | **{found.given_twice}** | **{found.lost}** | "
        + " / ".join(f"{percentile(wake, p):.0f}" for p in (0.5, 0.9, 0.99, 1.0)) + " |",
        "",
        f"{run.opened} of {run.polls} polls were sent {run.ramp_seconds:.1f} s after the client "
        f"processes were ready; {len(run.sent_at)} messages were acknowledged (send errors: "
        f"{send_errors}); {len(run.left_in_queues)} were found in the queues afterwards, of "
        f"which **{found.visible_again}** had already been given to a waiter (visible again "
        f"although its VisibilityTimeout was {VISIBILITY_SECONDS} s). Empty early: answered empty "
        "more than 1 s before its wait ran out. A waiter whose poll ran out its wait empty "
        "(before the sends: a long ramp) polls again, as a consumer does. Wake-up: from the "
        "send request of a waiter's message to the waiter's answer."
        + ("" if not run.problems else " Problems: " + "; ".join(run.problems) + "."),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--polls", type=int, default=10_000, help="concurrent idle long polls")
    parser.add_argument("--queues", type=int, default=300)
    parser.add_argument("--processes", type=int, default=4, help="client processes")
    parser.add_argument("--wait-seconds", type=int, default=20)
    parser.add_argument("--polls-per-second", type=float, default=2000.0,
                        help="how fast the polls are opened")
    parser.add_argument("--workers", type=int, default=1, help="`cqs serve --workers`")
    parser.add_argument("--endpoint", help="a running server instead of an embedded one")
    parser.add_argument("--server-pid", type=int, help="with --endpoint: whose memory to read")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = "python benchmarks/idle_long_polls.py " + " ".join(
        shlex.quote(part) for part in sys.argv[1:] if part != "--write-docs"
    )
    raise_open_file_limit(args.polls + 4096)  # the embedded server inherits it
    with tempfile.TemporaryDirectory(prefix="cqs-idle-") as scratch, \
            target_server(args.endpoint, args.server_pid, args.workers, Path(scratch)) as server:
        run = run_idle(server.endpoint, server.pid, args)
    found = findings(run)
    text = report(run, found, args, command, server.description)
    print(text)
    if args.write_docs:
        write_section(DOC, BEGIN, END, f"{BEGIN}\n{text}\n{END}", "Reliability")
    return 0 if found.passed else 1


if __name__ == "__main__":
    sys.exit(main())
