"""Sustained send+delete against a real Cassandra: does a message layout stay flat?

Each layout gets the same load, in intervals of `--interval` messages until `--messages`
went through (or `--max-seconds` of timed load passed). An interval writes its messages
with `--workers` concurrent loops (timed), reads every acknowledged one back by id (not
timed), then deletes every one of them with the same loops (timed). It reports throughput
(messages over the two timed phases), delete latency and, when it started the node
itself, the Cassandra JVM's CPU time per message over the timed phases (and, beside it,
over the whole interval with the read-back). After the last interval (not timed) the whole
queue is scanned (with `--get-deleted`, every deleted id is also read again by id). Every
message is checked: lost (write
acknowledged, not read back with its body before its delete), resurrected (delete
acknowledged, still readable or scanned at the end), read twice (one id on more than one
row of the final scan), and errors (a write or delete that raised). An interval with any
of them is not a result and the script exits 1 (a check read that times out is tried
again; one that fails every attempt leaves its id unverified and counts as an error, and
a final scan that fails every attempt so counts every deleted id of the layout).

Layouts:
  naive      100 fixed partitions per queue, CQL row DELETE (the CQS design taken literally)
  buckets    partitions per (shard, 10 s bucket), still CQL row DELETE (bucket sizing alone)
  regular    CassandraMessageStore: (bucket, shard) partitions in regular tables, one row
             DELETE per message (the only message tables cqs creates; the compact ones of
             earlier versions, measured on 1.2, cannot be created on 4.0 and later)

By default every layout runs on a fresh EmbeddedCassandra; `--contact-point` uses a running
node instead (then without CPU figures). Writes the results to docs/cassandra-deletes.md
with `--write-docs`. The per-message checks live in benchmarks/harness/delete_checks.py.

    python benchmarks/cassandra_deletes.py --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.delete_checks import Tally, final_check, read_back, run_phase  # noqa: E402
from benchmarks.harness.delete_layouts import Layout, RowDeleteLayout, StoreLayout  # noqa: E402
from benchmarks.harness.report import write_section  # noqa: E402
from cqs.domain.model import Message  # noqa: E402
from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402

DOC = ROOT / "docs" / "cassandra-deletes.md"
BEGIN = "<!-- cassandra_deletes:begin -->"
END = "<!-- cassandra_deletes:end -->"


@dataclass
class Interval:
    first: int
    last: int
    seconds: float  # the two timed phases: writes, then deletes
    delete_ms: list[float]
    cpu_seconds: float | None  # the JVM's CPU over the timed phases
    cpu_with_reads: float | None  # over the whole interval, the read-back included
    tally: Tally

    @property
    def messages(self) -> int:
        return self.last - self.first + 1

    @property
    def throughput(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0


@dataclass
class Run:
    layout: str
    intervals: list[Interval] = field(default_factory=list)
    stopped_early: bool = False
    resolved: str | None = None  # the message tables `default` resolved to
    rows_left: int | None = None  # rows the final scan found (-1: the scan failed)

    @property
    def label(self) -> str:
        return f"{self.layout} ({self.resolved})" if self.resolved else self.layout

    @property
    def clean(self) -> bool:
        return bool(self.intervals) and all(i.tally.clean for i in self.intervals) and (
            self.rows_left == 0)

    def total(self) -> Interval:
        """The whole layout as one interval (its rate over the sum of the timed phases)."""
        tally = Tally()
        for interval in self.intervals:
            tally.add(interval.tally)
        cpus = [i.cpu_seconds for i in self.intervals]
        with_reads = [i.cpu_with_reads for i in self.intervals]
        return Interval(
            1, self.intervals[-1].last if self.intervals else 0,
            sum(i.seconds for i in self.intervals),
            [ms for i in self.intervals for ms in i.delete_ms],
            None if None in cpus else sum(c for c in cpus if c is not None),
            None if None in with_reads else sum(c for c in with_reads if c is not None),
            tally,
        )


def jvm_cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(layout: Layout, name: str, args: argparse.Namespace, pid: int | None) -> Run:
    run = Run(name)
    first = 1
    timed = 0.0
    while first <= args.messages and timed < args.max_seconds:
        count = min(args.interval, args.messages - first + 1)
        interval = await one_interval(layout, first, count, args, pid)
        run.intervals.append(interval)
        timed += interval.seconds
        first += count
        print(
            f"{name:8} {interval.first:>7}-{interval.last:<7} {interval.throughput:8.0f} msg/s"
            f"  delete p50 {percentile(interval.delete_ms, 50):7.2f} ms"
            f"  p99 {percentile(interval.delete_ms, 99):7.2f} ms"
            f"  cpu/msg {format_cpu(interval, True)} ({format_cpu(interval, True, True)}"
            f" with read-back)  {interval.tally.problems() or 'all read back'}",
            flush=True,
        )
    run.stopped_early = first <= args.messages
    run.rows_left = await final_check(layout, [i.tally for i in run.intervals], args.workers,
                                      args.get_deleted)
    for interval in run.intervals:
        if interval.tally.resurrected or interval.tally.read_twice:
            print(f"{name:8} {interval.first:>7}-{interval.last:<7} NOT A RESULT: "
                  f"{interval.tally.problems()}", flush=True)
    print(f"{name:8} final scan: " + (f"{run.rows_left} rows" if run.rows_left >= 0 else
          "FAILED (every deleted id unverified)"), flush=True)
    return run


async def one_interval(layout: Layout, first: int, count: int, args: argparse.Namespace,
                       pid: int | None) -> Interval:
    """Write `count` messages (timed), read each acknowledged one back (not timed), delete
    them (timed). The JVM's CPU is taken around each timed phase and around the whole."""
    messages = [new_message(args.body_bytes) for _ in range(count)]
    cpu_start = jvm_cpu_seconds(pid)
    writes = await run_phase(messages, layout.put, args.workers)
    cpu_written = jvm_cpu_seconds(pid)
    lost, unread = await read_back(layout, writes.done, args.workers)
    cpu_read = jvm_cpu_seconds(pid)
    deletes = await run_phase(writes.done, lambda m: layout.delete(m.message_id),
                              args.workers)
    cpu_end = jvm_cpu_seconds(pid)
    timed_cpu = with_reads = None
    if None not in (cpu_start, cpu_written, cpu_read, cpu_end):
        assert cpu_start is not None and cpu_written is not None
        assert cpu_read is not None and cpu_end is not None
        timed_cpu = (cpu_written - cpu_start) + (cpu_end - cpu_read)
        with_reads = cpu_end - cpu_start
    tally = Tally(written=len(writes.done), lost=lost, errors=writes.errors + deletes.errors + unread,
                  deleted_ids=[m.message_id for m in deletes.done])
    return Interval(first, first + count - 1, writes.seconds + deletes.seconds,
                    deletes.call_ms, timed_cpu, with_reads, tally)


def new_message(body_bytes: int) -> Message:
    """A message whose body starts with its own id, so a read-back shows whose body it got."""
    sent_ms = int(time.time() * 1000)
    message_id = str(uuid.uuid1())
    return Message(message_id=message_id, body=f"{message_id}-".ljust(body_bytes, "x"),
                   md5_of_body="0" * 32, sent_timestamp_ms=sent_ms, visible_at_ms=sent_ms,
                   sender_id="bench")


def percentile(values: list[float], pct: int) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100)[max(0, min(98, pct - 1))]


def format_cpu(interval: Interval, unit: bool = False, with_reads: bool = False) -> str:
    seconds = interval.cpu_with_reads if with_reads else interval.cpu_seconds
    if seconds is None or not interval.messages:
        return "n/a"
    micros = seconds / interval.messages * 1e6
    return f"{micros:.0f} µs" if unit else f"{micros:.0f}"


async def run_layout(name: str, args: argparse.Namespace) -> Run:
    node: EmbeddedCassandra | None = None
    contact_point = args.contact_point
    if contact_point is None:
        node = EmbeddedCassandra(Path(tempfile.mkdtemp(prefix=f"cqs-bench-{name}-")))
        await asyncio.to_thread(node.start)
        contact_point = node.contact_point
    keyspace = f"bench_{name}_{uuid.uuid4().hex[:8]}"
    layout: Layout
    try:
        if name == "naive":
            layout = await RowDeleteLayout.open(contact_point, keyspace, bucket_seconds=None)
        elif name == "buckets":
            layout = await RowDeleteLayout.open(contact_point, keyspace, bucket_seconds=10)
        elif name == "regular":
            layout = await StoreLayout.open(contact_point, keyspace)
        else:
            raise ValueError(f"unknown layout {name!r}")
        try:
            run = await drive(layout, name, args, node.pid if node else None)
        finally:
            await layout.close()
        return run
    finally:
        if node is not None:
            await asyncio.to_thread(node.stop)


def row(label: str, messages: str, interval: Interval) -> str:
    tally = interval.tally
    rate = f"{interval.throughput:.0f}"
    if not tally.clean:
        rate = f"~~{rate}~~ **not a result: {tally.problems()}**"
    return (f"| {label} | {messages} | {rate} | {tally.written} | **{tally.lost}** | "
            f"**{tally.resurrected}** | **{tally.read_twice}** | {tally.errors} | "
            f"{percentile(interval.delete_ms, 50):.2f} | "
            f"{percentile(interval.delete_ms, 99):.2f} | {format_cpu(interval)} | "
            f"{format_cpu(interval, with_reads=True)} |")


def machine() -> list[str]:
    java = subprocess.run(
        ["java", "-version"], check=False, capture_output=True, text=True
    ).stderr
    memory_kb = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return [
        f"- CPUs (`nproc`): {os.cpu_count()}",
        f"- RAM: {memory_kb / 1024 / 1024:.1f} GiB",
        f"- Python {platform.python_version()}, {platform.system()} {platform.release()}",
        f"- Java: {java.splitlines()[0] if java else 'unknown'}",
        "- the embedded Cassandra 5.0, one node, protocol negotiated, consistency ONE",
    ]


def markdown(runs: list[Run], args: argparse.Namespace, command: str) -> str:
    lines = [
        BEGIN,
        "",
        "Generated by `benchmarks/cassandra_deletes.py`.",
        "",
        "Command:",
        "",
        "```",
        command,
        "```",
        "",
        *machine(),
        (
            f"- Load: {args.workers} concurrent loops, {args.body_bytes}-byte bodies, up to "
            f"{args.messages} messages or {args.max_seconds:.0f} s of timed load per layout, "
            f"in intervals of {args.interval}: write all, read back, delete all"
        ),
        "",
        "| layout | messages | msg/s | written | **lost** | **resurrected** | **read twice** "
        "| errors | delete p50 ms | delete p99 ms | Cassandra CPU µs/msg | µs/msg with "
        "read-back |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for interval in run.intervals:
            lines.append(row(run.label, f"{interval.first}–{interval.last}", interval))
        if run.intervals:
            total = run.total()
            lines.append(row(f"**{run.label}**", f"**all {total.first}–{total.last}**", total))
    lines += [
        "",
        "Every message is checked, in the same run as its rate. Each interval writes its "
        "messages (timed), reads every acknowledged one back by id (the store's `get`; "
        "naive and buckets: a SELECT by key) (not timed: **lost** is a write acknowledged and not read back with its body), "
        "then deletes them (timed). msg/s is the interval's messages over its two timed "
        "phases; the Cassandra CPU column is the JVM's CPU over those phases, the last "
        "column over the whole interval with the read-back (the node's background work "
        "during the read-back lands only there). After the last interval (not timed) the "
        "queue is read whole, every row of every bucket (the store's `scan`; naive and "
        "buckets: a SELECT of every row)"
        + (", and every acknowledged delete read again by id" if args.get_deleted else
           " (not each deleted id by `get` as well: on regular tables on 1.2 each such "
           "read steps over its partition's range tombstones, and 60,000 of them did not "
           "finish in 10 minutes)")
        + ": **resurrected** is a delete acknowledged and the id still scanned or read; **read twice** is an id on more than one row of the scan (a store "
        "benchmark has no deliveries, so this stands in for duplicates). Errors are writes "
        "or deletes that raised, and check reads that failed 5 attempts (the id unverified; "
        "a check read that timed out is tried again), and every deleted id of a layout whose "
        "final scan failed 5 attempts. A row with any of them is not a result.",
        "",
        "Rows the final scan found: "
        + ", ".join(f"{run.label} {run.rows_left if run.rows_left != -1 else 'failed'}"
                    for run in runs) + ".",
    ]
    stopped = [run.label for run in runs if run.stopped_early]
    if stopped:
        lines += ["", f"Stopped by the time limit before all messages: {', '.join(stopped)}."]
    lines += ["", END]
    return "\n".join(lines)




async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contact-point", help="host:port of a running node (default: embedded)")
    parser.add_argument("--layouts", default="naive,buckets,regular")
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--max-seconds", type=float, default=100.0)
    parser.add_argument("--interval", type=int, default=6_000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--body-bytes", type=int, default=1024)
    parser.add_argument("--get-deleted", action="store_true",
                        help="after the scan, also read every deleted id again by id (slow on"
                        " regular tables)")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(part) for part in sys.argv)
    runs = [await run_layout(name, args) for name in args.layouts.split(",")]
    section = markdown(runs, args, command)
    print(section)
    if args.write_docs:
        write_section(DOC, BEGIN, END, section, "Cassandra deletes")
    failed = [run.label for run in runs if not run.clean]
    for run in runs:
        if not run.clean:
            print(f"NOT A RESULT: {run.label}: {run.total().tally.problems() or 'no messages'}"
                  f", final scan {run.rows_left} rows", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
