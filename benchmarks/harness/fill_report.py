"""The report of benchmarks/cache_fill.py: what one run measured, as the markdown section
it writes into docs/scale.md.

Owns `Fill` (what watching the fill saw: time, leases, cached messages over time, Redis
memory, its slow Redis commands), the section's markers, and `markdown` (the table of
rates beside the per-message-id counts, struck through when the check failed; the probe
latencies; the server's log lines about the fill). Imports the ledger, drain and probe
modules of the script and benchmarks/harness/report.py; never cqs.
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.harness.compact_ledger import CompactVerdict
from benchmarks.harness.fill_drain import Checked, Drain, problems, rate_text
from benchmarks.harness.fill_probes import (
    VISIBILITY_SECONDS,
    BigQueueProbe,
    Probe,
    Samples,
    latency_rows,
)
from benchmarks.harness.report import host_lines

BEGIN = "<!-- cache_fill:begin -->"
END = "<!-- cache_fill:end -->"
FILL_LINE = re.compile(r"\bfill|\blease\b", re.IGNORECASE)


@dataclass
class Fill:
    """What watching the fill saw."""

    seconds: float = 0.0
    ready: bool = False
    owners: set[str] = field(default_factory=set)
    progress: list[tuple[float, int]] = field(default_factory=list)  # (s after trigger, cached)
    cached: int = 0
    memory_before: int = 0
    memory_after: int = 0
    memory_peak: int = 0
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (ms, command), SLOWLOG


def machine(redis_version: str) -> list[str]:
    return [
        *host_lines(),
        f"- redis-server {redis_version} (no persistence); the embedded Cassandra 5.0 "
        "(one node); one `cqs serve` process (defaults: fill page 500); "
        "the benchmark's client threads: all on the same 2 CPUs",
    ]


def mib(value: int) -> str:
    return f"{value / 2**20:,.1f} MiB"


def fill_log_lines(log_path: Path, limit: int = 14) -> list[str]:
    lines = [
        line.rstrip() for line in log_path.read_text(errors="replace").splitlines()
        if FILL_LINE.search(line) and "admin console" not in line
    ]
    if len(lines) > limit:
        lines = [*lines[: limit // 2], f"... ({len(lines) - limit} more lines) ...",
                 *lines[-limit // 2:]]
    return lines


def markdown(
    args: argparse.Namespace, command: str, redis_version: str, write_seconds: float,
    fill: Fill, probe: Probe, big: BigQueueProbe, approximate: str, drained: Drain,
    checked: Checked, verdict: CompactVerdict, approximate_after: str, log_lines: list[str],
) -> str:
    n = args.messages
    failed = problems(verdict, checked, drained)
    rate = fill.cached / fill.seconds if fill.seconds else 0.0
    drain_seconds = drained.all_delivered_seconds or drained.seconds
    drain_rate = drained.deliveries / drain_seconds if drain_seconds else 0.0
    left = checked.ledger.backlog
    per_message = (fill.memory_after - fill.memory_before) / max(1, fill.cached)
    progress = ", ".join(f"{seconds:.0f} s: {cached:,}" for seconds, cached in fill.progress)
    lines = [
        BEGIN,
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `benchmarks/cache_fill.py`. Command:",
        "",
        "```",
        command,
        "```",
        "",
        *machine(redis_version),
        "",
        "| measure | value |",
        "|---|---|",
        f"| messages written to Cassandra (`CassandraMessageStore.put`, {args.concurrency} "
        f"concurrent puts of {args.batch}) | {n:,} in {write_seconds:.0f} s "
        f"({rate_text(n / write_seconds, 'messages/s', failed)}) |",
        f"| fill finished (state `ready`) | {'yes' if fill.ready else 'NO (timed out)'} |",
        f"| fill time, trigger to `ready` | {fill.seconds:.1f} s |",
        f"| messages in the cache after the fill (HLEN payload) | {fill.cached:,} |",
        f"| fill rate | {rate_text(rate, 'messages/s', failed)} |",
        f"| fill leases taken (distinct owners seen) | {len(fill.owners)} |",
        f"| ApproximateNumberOfMessages after the fill | {approximate} |",
        f"| Redis `used_memory` before / after | {mib(fill.memory_before)} / "
        f"{mib(fill.memory_after)} (peak {mib(fill.memory_peak)}) |",
        f"| Redis memory per cached message | {per_message:,.0f} bytes |",
        f"| Redis commands of the fill that ran 10 ms or more (SLOWLOG), the longest | "
        f"{len(fill.slowest)}: "
        f"{', '.join(f'{ms:,.0f} ms {name}' for ms, name in fill.slowest[:3]) or '-'} |",
        f"| messages handed out from the big queue during the fill (VisibilityTimeout "
        f"{VISIBILITY_SECONDS} s, served from Cassandra; kept in flight through the drain) | "
        f"{len(big.held):,} |",
        f"| drain through SQS ({args.drain_tasks} tasks, ReceiveMessage of 10 + "
        f"DeleteMessageBatch) | {drained.deliveries:,} deliveries"
        f"{', the last new id after' if drained.finished else ' in'} "
        f"{drain_seconds:.1f} s ({rate_text(drain_rate, 'messages/s', failed)}); "
        + (f"finished ({drained.seconds:.1f} s with the quiet tail)" if drained.finished
           else f"STOPPED at --drain-timeout: {verdict.received:,} of {n:,} ids delivered")
        + " |",
        f"| **lost** (written, never delivered, per message id"
        f"{'' if drained.finished else '; the drain stopped: lost or still in the queue'}) | "
        f"**{verdict.lost:,}** |",
        f"| **early duplicates** (delivered again before the previous delivery's "
        f"{VISIBILITY_SECONDS} s timeout ran out, per message id) | "
        f"**{verdict.early_duplicates:,}** |",
        f"| deliveries after a delete | {verdict.deliveries_after_delete:,} |",
        f"| deliveries with a wrong or unknown message id | "
        f"{verdict.wrong_ids + checked.unknown_bodies:,} |",
        f"| ids delivered (of {verdict.sent:,} written) / deleted / left in the queue | "
        f"{verdict.received:,} / {checked.ledger.deleted_total:,} / {left:,} |",
        f"| ApproximateNumberOfMessages after the drain | {approximate_after} |",
        f"| failed calls in the drain | "
        f"{', '.join(f'{k}: {v}' for k, v in checked.errors.items()) or 'none'} |",
        "",
        f"Cached messages over time (seconds after the trigger): {progress}.",
        "",
    ]
    if failed:
        lines += [f"**Not a result: {'; '.join(failed)}.**", ""]
    if verdict.lost_examples or verdict.early_examples:
        lines += [f"Examples (message number, seconds after the previous request): lost "
                  f"{list(verdict.lost_examples)}, early {list(verdict.early_examples)}.", ""]
    if n < 1_000_000 and fill.ready and not failed:
        lines += [
            f"**Estimate for 1,000,000 messages** (extrapolated linearly from this run of "
            f"{n:,}, not measured): fill ≈ {1_000_000 / rate:,.0f} s at {rate:,.0f}/s; Redis "
            f"≈ {per_message * 1_000_000 / 2**30:,.2f} GiB for the queue's cache; writing them "
            f"through `put` on this machine ≈ {1_000_000 / (n / write_seconds) / 60:,.0f} min.",
            "",
        ]
    lines += [
        "Probe latencies (boto3, no retries, 30 s read timeout). `baseline`: the "
        f"{args.baseline:.0f} s before the trigger; `during fill`: trigger to `ready`.",
        "",
        "| phase | operation | calls | median ms | p95 ms | p99 ms | max ms | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for phase in ("baseline", "during fill"):
        lines += latency_rows(phase, probe.phases.get(phase, Samples()))
    lines += latency_rows("during fill", big.samples)
    errors = [e for s in [*probe.phases.values(), big.samples] for v in s.errors.values() for e in v]
    if errors:
        lines += ["", "Probe errors (first 5):", "", *[f"- `{e[:200]}`" for e in errors[:5]]]
    lines += ["", "Server log lines about the fill:", "", "```", *log_lines, "```", "", END]
    return "\n".join(lines)
