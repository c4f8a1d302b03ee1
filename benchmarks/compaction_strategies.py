"""Which compaction strategy the message tables should have on Cassandra 5.0, by measurement.

Per strategy (stcs: SizeTieredCompactionStrategy, 5.0's default and what cqs's schema gets
today; ucs: UnifiedCompactionStrategy; lcs: LeveledCompactionStrategy; twcs:
TimeWindowCompactionStrategy) a fresh EmbeddedCassandra 5.0 node, a keyspace created by the
real CassandraMessageStore (its statements unchanged), then `ALTER TABLE ... WITH
compaction = {...}` on the message table and its bucket index.

Time is compressed by `--scale` (default 60: a real second is a simulated minute). Every
clock-based setting is its production value divided by the scale: the store's bucket length
(300 s) and closed-bucket slack (120 s), the tables' gc_grace_seconds (cqs's 3600 s), the
strategies' tombstone_compaction_interval (1 day) and TWCS's expired-sstable check (600 s);
the TWCS window (`--twcs-window-minutes`, simulated) and a memtable flush every
`--flush-minutes` simulated minutes (the tables' memtable_flush_period_in_ms, standing in for
a busy node's memtables filling up; JMX is off, so nothing forces a flush otherwise) are
scaled the same way. The load: `--rate` sends a real second; each message is read back by
id and deleted within `--soon-minutes` simulated minutes, or, a `--late-fraction` of them,
between 10 simulated minutes and `--late-hours` simulated hours after, and a
`--never-fraction` is not deleted within the run (the backlog real queues have).

Every `--sample-minutes` simulated minutes, while the load goes on: a cache fill (the
store's `scan`, pages of 500, timed), the same fill again with driver query tracing (the
tombstone cells and live rows Cassandra says each partition read stepped over, and the
sstables it merged), the bytes and sstables of the message table's data directory, and the
JVM's CPU time per message sent (from /proc; the traced fill and the fetching of its
traces left out). Every message is checked (benchmarks/harness/compaction_load.py): lost,
resurrected, read twice, errors, at each fill and by a final scan; a strategy with any of
them is not a result and the script exits 1.

    python benchmarks/compaction_strategies.py --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.compaction_load import (  # noqa: E402
    Consumption,
    Ledger,
    SimulatedQueue,
    Verdict,
    scan_ids,
)
from benchmarks.harness.compaction_probes import (  # noqa: E402
    STRATEGY_NAMES,
    FillTrace,
    TimeScale,
    TracedStore,
    compactions_so_far,
    jvm_cpu_seconds,
    set_strategy,
    table_disk,
)
from benchmarks.harness.report import command_line, git_commit, host_lines, write_section  # noqa: E402
from cqs.cassandra_store import (  # noqa: E402
    CassandraConnection,
    CassandraMessageStore,
    CassandraSession,
    connect,
)
from cqs.cassandra_store.schema import MESSAGES_TABLE  # noqa: E402
from cqs.domain.model import Queue  # noqa: E402
from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402

DOC = ROOT / "docs" / "cassandra-deletes.md"
BEGIN = "<!-- compaction_strategies:begin -->"
END = "<!-- compaction_strategies:end -->"
FILL_PAGE_SIZE = 500  # cqs's cache_fill_page_size
RETENTION_SECONDS = 345_600  # 4 days, simulated


@dataclass
class Sample:
    simulated_hour: float
    live: int  # rows the timed fill returned
    fill_ms: float
    trace: FillTrace
    disk_bytes: int
    sstables: int
    compactions: int  # of the message table, since the start
    compacted_bytes: int  # read by those compactions
    sent: int  # acknowledged sends over the span of `cpu_seconds`
    seconds: float  # that span: from the previous sample's traced fill to this one's
    cpu_seconds: float | None  # the JVM's, since the previous sample, the traced fill left out


@dataclass
class Run:
    strategy: str
    compaction: str = ""
    release_version: str = ""
    samples: list[Sample] = field(default_factory=list)
    verdict: Verdict = field(default_factory=Verdict)
    written: int = 0
    deleted: int = 0
    final_live: int = 0

    @property
    def clean(self) -> bool:
        return bool(self.samples) and self.verdict.clean


async def run_strategy(strategy: str, args: argparse.Namespace, scale: TimeScale) -> Run:
    run = Run(strategy)
    node = EmbeddedCassandra(Path(tempfile.mkdtemp(prefix=f"cqs-compaction-{strategy}-")))
    await asyncio.to_thread(node.start)
    run.release_version = node.release_version
    keyspace = f"bench_{strategy}_{uuid.uuid4().hex[:8]}"
    try:
        session = await connect(CassandraConnection(
            (node.contact_point,), keyspace, request_timeout=30.0,
            message_gc_grace_seconds=scale.gc_grace_seconds))
        store = CassandraMessageStore(
            session, bucket_seconds=scale.bucket_seconds,
            closed_bucket_slack_seconds=scale.closed_slack_seconds, owns_session=True)
        try:
            run.compaction = await set_strategy(session, keyspace, strategy, scale)
            traced = await TracedStore.open(session, keyspace, scale)
            await drive(run, store, session, traced, node, keyspace, args, scale)
        finally:
            await store.close()
    finally:
        await asyncio.to_thread(node.stop)
        shutil.rmtree(node.data_dir, ignore_errors=True)
    return run


async def drive(run: Run, store: CassandraMessageStore, store_session: CassandraSession,
                traced: TracedStore,
                node: EmbeddedCassandra, keyspace: str, args: argparse.Namespace,
                scale: TimeScale) -> None:
    queue = Queue(name="bench", queue_id=str(uuid.uuid4()), attributes={
        "MessageRetentionPeriod": str(round(scale.real(RETENTION_SECONDS)))})
    ledger = Ledger(args.body_bytes)
    consumption = Consumption(
        soon=scale.real(args.soon_minutes * 60), late_min=scale.real(600),
        late_max=scale.real(args.late_hours * 3600), late_fraction=args.late_fraction,
        never_fraction=args.never_fraction)
    load = SimulatedQueue(store, queue, ledger, args.rate, consumption, args.seed)
    loading = asyncio.ensure_future(load.run())
    started = previous_at = time.monotonic()
    previous_sent = 0
    previous_cpu = jvm_cpu_seconds(node.pid)
    duration = scale.real(args.hours * 3600)
    interval = scale.real(args.sample_minutes * 60)
    next_sample = started + interval
    try:
        while next_sample <= started + duration + 0.5:
            await asyncio.sleep(max(0.0, next_sample - time.monotonic()))
            began = time.monotonic()
            scanned = await scan_ids(store, queue, FILL_PAGE_SIZE)
            ended = time.monotonic()
            ledger.check_scan(scanned, began, ended)
            cpu_before_trace = jvm_cpu_seconds(node.pid)
            sent, at = load.sent, time.monotonic()  # the span of the CPU figure ends here
            trace = await traced.fill(queue, FILL_PAGE_SIZE)
            cpu_after_trace = jvm_cpu_seconds(node.pid)
            previous_sent_next, previous_at_next = load.sent, time.monotonic()
            disk_bytes, sstables = table_disk(node.data_dir, keyspace, MESSAGES_TABLE)
            compactions, compacted = await compactions_so_far(store_session, keyspace,
                                                              MESSAGES_TABLE)
            cpu = None
            if None not in (previous_cpu, cpu_before_trace, cpu_after_trace):
                assert previous_cpu is not None and cpu_before_trace is not None
                cpu = cpu_before_trace - previous_cpu
                previous_cpu = cpu_after_trace
            sample = Sample(scale.simulated_hours(began - started), sum(scanned.values()),
                            (ended - began) * 1000, trace, disk_bytes, sstables,
                            compactions, compacted,
                            sent - previous_sent, at - previous_at, cpu)
            previous_sent, previous_at = previous_sent_next, previous_at_next
            run.samples.append(sample)
            print(f"{run.strategy:5} {sample_line(sample)}  checks: "
                  f"{ledger.verdict.problems()}", flush=True)
            next_sample += interval
    finally:
        load.stop()
        await loading
    began = time.monotonic()
    final = await scan_ids(store, queue, FILL_PAGE_SIZE)
    ledger.check_scan(final, began, time.monotonic())
    run.verdict, run.written, run.deleted = ledger.verdict, len(ledger.written), load.deleted
    run.final_live = sum(final.values())
    print(f"{run.strategy:5} final: {run.written} written, {run.deleted} deleted, "
          f"{run.final_live} left (ledger: {ledger.live}); checks: {run.verdict.problems()}",
          flush=True)


def mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


def cpu_per_message(sample: Sample) -> str:
    if sample.cpu_seconds is None or not sample.sent:
        return "n/a"
    return f"{sample.cpu_seconds / sample.sent * 1e6:.0f}"


def sample_cells(sample: Sample) -> list[str]:
    trace = sample.trace
    per_live = f"{trace.message_tombstones / sample.live:.1f}" if sample.live else "n/a"
    disk_per_live = f"{sample.disk_bytes / sample.live:,.0f}" if sample.live else "n/a"
    merged = trace.sstables_merged
    untraced = f" ({trace.untraced} untraced)" if trace.untraced else ""
    return [
        f"{sample.simulated_hour:.1f}", f"{sample.live:,}", f"{sample.fill_ms:.0f}",
        f"{trace.message_tombstones:,}{untraced}", f"{trace.index_tombstones:,}", per_live,
        f"{mean(merged):.2f} / {max(merged, default=0)}", str(sample.sstables),
        f"{sample.compactions} / {sample.compacted_bytes / 2**20:.0f}",
        f"{sample.disk_bytes / 2**20:.1f}", disk_per_live, cpu_per_message(sample),
        f"{sample.sent / sample.seconds:.0f}" if sample.seconds else "n/a",
    ]


def sample_line(sample: Sample) -> str:
    cells = sample_cells(sample)
    return (f"h {cells[0]:>4}  live {cells[1]:>6}  fill {cells[2]:>5} ms  tombstones "
            f"{cells[3]:>8} (+{cells[4]} index, {cells[5]}/live)  sstables merged {cells[6]}"
            f"  compactions/MiB {cells[8]}  on disk {cells[7]} sstables {cells[9]} MiB"
            f" ({cells[10]} B/live)  cpu {cells[11]} µs/msg  {cells[12]} msg/s")


HEADER = ("| simulated hour | live messages | fill ms | tombstones scanned (messages) | "
          "tombstones scanned (bucket index) | message tombstones per live message | "
          "sstables merged per partition read (mean / max) | sstables | compactions / MiB "
          "compacted so far | MiB on disk | "
          "bytes on disk per live message | Cassandra CPU µs per message sent | sends/s |")


def markdown(runs: list[Run], args: argparse.Namespace, scale: TimeScale) -> str:
    versions = sorted({run.release_version for run in runs if run.release_version})
    lines = [
        BEGIN, "",
        f"Generated by `benchmarks/compaction_strategies.py` at commit {git_commit()}, "
        f"Cassandra {', '.join(versions) or 'unknown'} (EmbeddedCassandra, one node, 768 MiB "
        "heap, a fresh node per strategy, consistency ONE):", "",
        "```", command_line("compaction_strategies.py"), "```", "",
        *host_lines(),
        f"- Time compressed {scale.factor}×: {args.hours:g} simulated hours per strategy "
        f"({scale.real(args.hours * 3600):.0f} real seconds); bucket {scale.bucket_seconds} s "
        f"(300 s), closed-bucket slack {scale.closed_slack_seconds} s (120 s), "
        f"gc_grace_seconds {scale.gc_grace_seconds} (3600), tombstone_compaction_interval "
        f"{round(86_400 / scale.factor)} s (1 day), expired-sstable check (TWCS, UCS) "
        f"{max(1, round(600 / scale.factor))} s (600 s), memtable flush every "
        f"{scale.flush_period_ms / 1000:g} s ({args.flush_minutes} simulated minutes), TWCS "
        f"window {scale.twcs_window_real_minutes} min ({args.twcs_window_minutes} simulated "
        "minutes); real values, production ones in brackets",
        f"- Load: {args.rate:g} sends/s real ({args.rate / scale.factor:.1f} a simulated "
        f"second), {args.body_bytes}-byte bodies; every message read back by id, then "
        f"deleted: {100 * (1 - args.late_fraction - args.never_fraction):.1f}% within "
        f"{args.soon_minutes:g} simulated minute(s), {100 * args.late_fraction:.1f}% between "
        f"10 simulated minutes and {args.late_hours:g} simulated hours, "
        f"{100 * args.never_fraction:.1f}% not within the run",
        "",
    ]
    for run in runs:
        state = "" if run.clean else f" — **not a result: {run.verdict.problems()}**"
        lines += [
            f"**{run.strategy}** `{run.compaction}`{state}", "",
            f"{run.written:,} messages written, {run.deleted:,} deleted, "
            f"{run.final_live:,} left by the final scan; lost **{len(run.verdict.lost)}**, "
            f"resurrected **{len(run.verdict.resurrected)}**, read twice "
            f"**{len(run.verdict.read_twice)}**, errors {run.verdict.errors}.", "",
            HEADER, "|" + "---|" * 13,
        ]
        lines += ["| " + " | ".join(sample_cells(s)) + " |" for s in run.samples]
        lines.append("")
    lines += [
        "Each row is one sample, taken while the load went on. *fill ms*: the store's scan "
        "of the whole queue (what a cache fill reads, pages of 500). *tombstones scanned*: "
        "the same fill again with query tracing, the sum of Cassandra's \"Read N live rows "
        "and M tombstone cells\" over every partition it read, in the message table and in "
        "the bucket index. *sstables merged*: Cassandra's \"Merged data from memtables and "
        "N sstables\" per message partition read. *compactions*: the message table's, "
        "from `system.compaction_history`, with the bytes they read. *on disk*: every "
        "file of the message "
        "table's data directory (the memtable not included). *CPU*: the Cassandra JVM's "
        "user + system time since the previous sample (flushes, compaction, the read-backs "
        "and the timed fill included; the traced fill and fetching its traces left out) over "
        "the sends acknowledged in it; each send is one insert, one read by id and one "
        "delete. *sends/s*: acknowledged sends a real second over the same span.",
        "", END,
    ]
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default=",".join(STRATEGY_NAMES))
    parser.add_argument("--scale", type=int, default=60,
                        help="simulated seconds a real second (300 s / scale must be whole)")
    parser.add_argument("--hours", type=float, default=4.0, help="simulated hours a strategy")
    parser.add_argument("--sample-minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=300.0, help="sends a real second")
    parser.add_argument("--body-bytes", type=int, default=1024)
    parser.add_argument("--soon-minutes", type=float, default=1.0)
    parser.add_argument("--late-fraction", type=float, default=0.045)
    parser.add_argument("--late-hours", type=float, default=3.0)
    parser.add_argument("--never-fraction", type=float, default=0.005)
    parser.add_argument("--flush-minutes", type=int, default=10)
    parser.add_argument("--twcs-window-minutes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    scale = TimeScale(args.scale, args.flush_minutes, args.twcs_window_minutes)
    strategies = args.strategies.split(",")
    for strategy in strategies:
        scale.compaction(strategy)  # an unknown name or an unscalable window fails here
    runs = [await run_strategy(strategy, args, scale) for strategy in strategies]
    section = markdown(runs, args, scale)
    print(section)
    if args.write_docs:
        write_section(DOC, BEGIN, END, section, "Cassandra deletes")
    for run in runs:
        if not run.clean:
            print(f"NOT A RESULT: {run.strategy}: {run.verdict.problems()}", file=sys.stderr)
    return 0 if all(run.clean for run in runs) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
