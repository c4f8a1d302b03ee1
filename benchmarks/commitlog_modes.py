"""What each commit-log mode of the embedded Cassandra costs a send (issue 26, item 7).

Per mode of `--modes` (batch: `cqs serve`'s default, a write answered after an fsync that
covers it; group: the same with an fsync every 10 ms; periodic: Cassandra's default, fsync
every 10 s; off: no fsync at all, the tests' throwaway nodes), one after another on this machine: an embedded Redis, an
embedded Cassandra 5.0 with that mode (its data on this machine's disk under `--work`), and
one `cqs serve` over them. Then, on fresh queues:

- sequential: `--messages` SendMessage calls one at a time after `--warmup` untimed ones
  (one keep-alive connection): the latency of a send;
- concurrent: `--threads` clients sending `--messages` in all at once: sends a second, and
  the CPU seconds of the Cassandra JVM and of `cqs serve` per 1,000 sends.

Every message id is checked: each queue is drained after its phase (receive and delete), and
a lost message or an early duplicate makes the row "not a result" and the exit status 1.
`--write-docs` regenerates docs/reliability.md's section between its markers.

    python benchmarks/commitlog_modes.py --write-docs
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.blocking_sqs import (  # noqa: E402
    BlockingSqs,
    CallError,
    Timings,
    drain,
    send_recorded,
    time_sends,
)
from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict, percentile  # noqa: E402
from benchmarks.harness.peer_servers import cpu_seconds  # noqa: E402
from benchmarks.harness.report import (  # noqa: E402
    DocSection,
    command_line,
    git_commit,
    host_lines,
)
from benchmarks.harness.servers import start_server  # noqa: E402
from cqs.embedded.cassandra import COMMITLOG_SYNC_MODES, EmbeddedCassandra  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402

DOC = DocSection(ROOT / "docs" / "reliability.md", "commitlog-modes", "Reliability")


@dataclass
class Row:
    mode: str
    p50_ms: float
    p99_ms: float
    sends_per_second: float
    cassandra_cpu_per_1000: float
    server_cpu_per_1000: float
    verdict: Verdict

    @property
    def clean(self) -> bool:
        return self.verdict.clean


@contextlib.contextmanager
def stack(mode: str, work: Path) -> Iterator[tuple[str, int, int]]:
    """(endpoint, Cassandra's pid, cqs serve's pid) of a fresh stack with `mode`."""
    redis = EmbeddedRedis(work / "redis")
    cassandra = EmbeddedCassandra(work / "cassandra", commitlog_sync=mode)
    server = None
    try:
        redis.start()
        cassandra.start()
        server, endpoint, _log = start_server(
            redis.url, cassandra.contact_point, "bench_" + uuid.uuid4().hex[:10], work,
            ["--log-level", "WARNING"],
        )
        assert cassandra.pid is not None
        yield endpoint, cassandra.pid, server.pid
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        redis.stop()
        cassandra.stop()


def concurrent_sends(endpoint: str, queue_url: str, prefix: str, threads: int,
                     messages: int) -> tuple[DeliveryLedger, float]:
    """`messages` sends over `threads` clients at once; (their ledger, seconds taken)."""
    ledgers = [DeliveryLedger() for _ in range(threads)]

    def send(index: int) -> None:
        client = BlockingSqs(endpoint)
        try:
            for n in range(index, messages, threads):
                send_recorded(client, ledgers[index], queue_url, f"{prefix}-{n}", (CallError,))
        finally:
            client.close()

    workers = [threading.Thread(target=send, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    merged = DeliveryLedger()
    for ledger in ledgers:
        merged.absorb(ledger)
    return merged, seconds


def measure(mode: str, args: argparse.Namespace) -> Row:
    with tempfile.TemporaryDirectory(prefix=f"cqs-commitlog-{mode}-", dir=args.work) as work, \
            stack(mode, Path(work)) as (endpoint, cassandra_pid, server_pid):
        client = BlockingSqs(endpoint)
        run = uuid.uuid4().hex[:8]
        try:
            sequential_url = client.create_queue(f"commitlog-{mode}-{run}-seq")
            concurrent_url = client.create_queue(f"commitlog-{mode}-{run}-conc")
        finally:
            client.close()
        sender = BlockingSqs(endpoint)
        try:
            timings: Timings = time_sends(sender, sequential_url, f"{run}-s", args.warmup,
                                          args.messages)
        finally:
            sender.close()
        drain(endpoint, sequential_url, timings.ledger)
        cpu_before = cpu_seconds(cassandra_pid), cpu_seconds(server_pid)
        ledger, seconds = concurrent_sends(endpoint, concurrent_url, f"{run}-c", args.threads,
                                           args.messages)
        cassandra_cpu = cpu_seconds(cassandra_pid) - cpu_before[0]
        server_cpu = cpu_seconds(server_pid) - cpu_before[1]
        drain(endpoint, concurrent_url, ledger)
        sent = ledger.sent_count()
        both = DeliveryLedger()
        both.absorb(timings.ledger)
        both.absorb(ledger)
        per_thousand = 1000 / max(1, sent)
        return Row(mode, percentile(timings.seconds, 0.5) * 1000,
                   percentile(timings.seconds, 0.99) * 1000, sent / seconds,
                   cassandra_cpu * per_thousand, server_cpu * per_thousand, both.verdict())


def report(rows: list[Row], args: argparse.Namespace, began: float) -> str:
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} at commit {git_commit()}: per mode an embedded "
        f"Redis, an embedded Cassandra 5.0 (its data on the machine's disk) and one `cqs serve`; "
        f"{args.messages} sequential sends after {args.warmup} untimed, then {args.messages} "
        f"sends over {args.threads} clients at once. {time.time() - began:.0f} s in all. "
        f"Command: `{command_line('commitlog_modes.py')}`.",
        "",
        *host_lines(),
        "",
        "| commit log | send p50 ms | send p99 ms | concurrent sends/s | Cassandra CPU s per 1,000 "
        "sends | cqs serve CPU s per 1,000 sends | sent | lost | early duplicates |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        v = row.verdict
        mark = "" if row.clean else " (not a result)"
        lines.append(
            f"| {row.mode}{mark} | {row.p50_ms:.2f} | {row.p99_ms:.2f} | "
            f"{row.sends_per_second:.0f} | {row.cassandra_cpu_per_1000:.2f} | "
            f"{row.server_cpu_per_1000:.2f} | {v.sent} | {len(v.lost)} | {v.early_duplicates} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--modes", default="off,periodic,group,batch")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--work", default=None, help="where the nodes' data goes (a disk)")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = set(modes) - set(COMMITLOG_SYNC_MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}; known: {COMMITLOG_SYNC_MODES}")
    began = time.time()
    rows = []
    for mode in modes:
        print(f"== {mode} (load {os.getloadavg()[0]:.1f})", flush=True)
        rows.append(measure(mode, args))
        print(f"   {rows[-1]}", flush=True)
    text = report(rows, args, began)
    print(text)
    if args.write_docs:
        DOC.write(text)
    return 0 if all(row.clean for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
