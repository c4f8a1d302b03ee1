"""The capacity model of docs/scale.md: what one message of the standard mixed workload
(1 KiB bodies, sent in batches of 10, received 10 at a time and deleted in batches) costs
each tier, measured here with Cassandra at replication factor 3, and from those costs how
many API processes, Redis shards and Cassandra nodes carry 10k, 100k and 1M messages a
second. The model is checked against a second measured point, with two API processes.

One run, every server on this machine:
- an embedded Redis and three embedded Cassandra nodes (127.0.0.2-4, one ring), their
  commit logs synced periodically (Cassandra's default, what a cluster with RF 3 runs);
- point 1: `cqs serve --workers 1` over them (RF 3, QUORUM reads and writes): the model's
  input, the CPU per message of each tier (API process, Redis, the three Cassandra JVMs
  together), each tier's idle CPU over the same span taken away;
- point 2: `cqs serve --workers 2` over the same Redis and nodes (a keyspace of its own):
  the model predicts its CPU per message per tier (the same as point 1's: every cost is
  per message) and so the CPU the run used; the table gives predicted against measured.

Each point: an untimed warm-up, then the mixed scenario of sqs_throughput.py with
`--messages`, every message id checked (a point that lost a message or delivered one early
is not a result; the script exits 1). `--write-docs` regenerates the section of
docs/scale.md between its markers.

    python benchmarks/capacity_model.py --messages 20000 --write-docs
    python benchmarks/capacity_model.py --messages 2000 --warmup-messages 500   # a quick look
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqs_throughput import Options, Row, Tally, measure  # noqa: E402

from benchmarks.harness.peer_servers import cpu_seconds, stop  # noqa: E402
from benchmarks.harness.report import (  # noqa: E402
    DocSection,
    command_line,
    git_commit,
    load_average_span,
    system_summary,
)
from benchmarks.harness.servers import start_server  # noqa: E402
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402

SECTION = DocSection(ROOT / "docs" / "scale.md", "capacity_model", "Scale")
BODY_BYTES = 1024
REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 3}"
RF3_ARGS = ["--cassandra-replication", REPLICATION,
            "--cassandra-read-consistency", "QUORUM", "--cassandra-write-consistency", "QUORUM"]
TIERS = ("API", "Redis", "Cassandra")
RATES = (10_000, 100_000, 1_000_000)
# The model's assumptions (stated with the table).
UTILISATION = 0.7  # the share of a core (or of a node's cores) a tier is sized to use
API_HOST_CORES = 8  # one API process per core
CASSANDRA_NODE_CORES = 16
MIN_CASSANDRA_NODES = 3  # RF 3


@dataclass
class Point:
    """One measured point: the mixed scenario on `workers` API processes."""

    workers: int
    messages: int = 0
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # tier -> CPU seconds, idle taken away
    idle: dict[str, float] = field(default_factory=dict)  # tier -> idle CPU seconds per second
    client_cpu: float = 0.0  # the boto3 client processes' CPU seconds
    problems: str = ""

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0

    def micros(self, tier: str) -> float:
        """CPU microseconds per message of `tier`."""
        return self.cpu[tier] * 1e6 / self.messages if self.messages else 0.0

    @property
    def total_micros(self) -> float:
        return sum(self.micros(tier) for tier in TIERS)


class TierMeter:
    """The CPU seconds of each tier's processes (each tier: the root pids of its processes)."""

    def __init__(self, tiers: dict[str, list[int]]) -> None:
        self.tiers = tiers

    def read(self) -> dict[str, float]:
        return {tier: sum(cpu_seconds(pid) for pid in pids) for tier, pids in self.tiers.items()}

    def idle_rates(self, seconds: float) -> dict[str, float]:
        """Each tier's CPU seconds per second while nothing is asked of it."""
        before = self.read()
        time.sleep(seconds)
        after = self.read()
        return {tier: (after[tier] - before[tier]) / seconds for tier in after}


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children (the client processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_point(point: Point, endpoint: str, meter: TierMeter, args: argparse.Namespace
                  ) -> Point:
    options = Options(groups=("mixed",), messages=args.messages, body_size=BODY_BYTES)
    if args.warmup_messages:
        print(f"   warm-up: {args.warmup_messages:,} messages (untimed)", flush=True)
        warm = measure(endpoint, args.seconds, args.clients,
                       Options(groups=("mixed",), messages=args.warmup_messages,
                               body_size=BODY_BYTES))
        point.problems = "; ".join(row.check.problems() for row in warm
                                   if row.check is not None and not row.check.clean)
    point.idle = meter.idle_rates(args.idle_seconds)
    spans: dict[str, float] = {}

    @contextmanager
    def around(_phase: str) -> Iterator[None]:
        before, clients_before, began = meter.read(), children_cpu(), time.monotonic()
        try:
            yield
        finally:
            spans["wall"] = time.monotonic() - began
            after = meter.read()
            point.cpu = {tier: after[tier] - before[tier] - point.idle[tier] * spans["wall"]
                         for tier in after}
            point.client_cpu = children_cpu() - clients_before

    rows = measure(endpoint, args.seconds, args.clients, options, around)
    window = Tally()
    for row in rows:
        window.add(row.tally)
    point.messages = rows[-1].tally.messages  # the consumers': each sent, received, deleted
    point.seconds = window.active_seconds
    point.problems = "; ".join(filter(None, [point.problems, *problems_of(rows)]))
    return point


def problems_of(rows: list[Row]) -> list[str]:
    checks = {id(row.check): row.check for row in rows}
    return [check.problems() if check else "the queue was not checked"
            for check in checks.values() if check is None or not check.clean]


def run(args: argparse.Namespace, work: Path) -> tuple[list[Point], str]:
    """The two points, and the Cassandra release they ran on."""
    points = []
    with EmbeddedCassandraCluster(work / "cassandra", commitlog_sync="periodic") as cluster:
        redis = EmbeddedRedis(work / "redis")
        redis.start()
        try:
            nodes = [cluster.pid(index) for index in range(len(cluster.nodes))]
            for workers in (1, 2):
                print(f"== cqs serve --workers {workers}", flush=True)
                point_dir = work / f"workers-{workers}"
                point_dir.mkdir()
                server, endpoint, _log = start_server(
                    redis.url, ",".join(cluster.contact_points),
                    "capacity_" + uuid.uuid4().hex[:8], point_dir,
                    ["--log-level", "WARNING", "--workers", str(workers), *RF3_ARGS],
                )
                try:
                    meter = TierMeter({"API": [server.pid], "Redis": [redis.pid],
                                       "Cassandra": nodes})
                    points.append(measure_point(Point(workers), endpoint, meter, args))
                finally:
                    stop(server)
        finally:
            redis.stop()
        return points, cluster.nodes[0].release_version


def model_lines(basis: Point) -> list[str]:
    """The sizing table for RATES from `basis`'s costs per message."""
    lines = [
        "| messages/s (mixed, 1 KiB) | API cores | API processes (hosts of "
        f"{API_HOST_CORES} cores) | Redis cores | Redis shards (primaries + replicas) | "
        f"Cassandra cores (RF 3) | Cassandra nodes of {CASSANDRA_NODE_CORES} cores |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for rate in RATES:
        api, redis, cassandra = (rate * basis.micros(tier) / 1e6 for tier in TIERS)
        processes = math.ceil(api / UTILISATION)
        shards = math.ceil(redis / UTILISATION)
        nodes = max(MIN_CASSANDRA_NODES,
                    math.ceil(cassandra / (CASSANDRA_NODE_CORES * UTILISATION)))
        lines.append(
            f"| {rate:,} | {api:,.1f} | {processes:,} ({math.ceil(processes / API_HOST_CORES):,})"
            f" | {redis:,.1f} | {shards:,} + {shards:,} | {cassandra:,.1f} | {nodes:,} |"
        )
    return lines


def check_lines(basis: Point, checked: Point) -> list[str]:
    """Point 2's CPU per tier: predicted from point 1's costs, and measured."""
    lines = ["| tier | µs per message, 1 process (the model) | µs per message, 2 processes | "
             "CPU s predicted for point 2 | CPU s measured | measured ÷ predicted |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for tier in (*TIERS, "all three"):
        tiers = TIERS if tier == "all three" else (tier,)
        model = sum(basis.micros(t) for t in tiers)
        seen = sum(checked.micros(t) for t in tiers)
        predicted = model * checked.messages / 1e6
        measured = sum(checked.cpu[t] for t in tiers)
        lines.append(f"| {tier} | {model:,.0f} | {seen:,.0f} | {predicted:,.1f} | "
                     f"{measured:,.1f} | {measured / predicted:.2f} |")
    return lines


def point_lines(points: list[Point]) -> list[str]:
    lines = ["| API processes | messages | msg/s | µs per message: API / Redis / Cassandra (3 "
             "nodes) | clients' µs per message | idle CPU per second: API / Redis / Cassandra |"
             " verdict |", "| ---: | ---: | ---: | --- | ---: | --- | --- |"]
    for point in points:
        split = " / ".join(f"{point.micros(tier):,.0f}" for tier in TIERS)
        idle = " / ".join(f"{point.idle[tier]:.3f}" for tier in TIERS)
        client = point.client_cpu * 1e6 / point.messages if point.messages else 0.0
        verdict = point.problems or "every id delivered, 0 lost, 0 early duplicates"
        lines.append(f"| {point.workers} | {point.messages:,} | {point.rate:,.0f} | {split} | "
                     f"{client:,.0f} | {idle} | {verdict} |")
    return lines


def report(points: list[Point], minutes: float, release: str) -> str:
    basis, checked = points
    return "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} at commit {git_commit()} on {system_summary()};"
        f" Cassandra {release} (three nodes, RF 3, QUORUM, commit log periodic), one Redis, "
        "the API processes and the boto3 client processes all on this machine. It took "
        f"{minutes:.1f} minutes; {load_average_span()}. Command: "
        f"`{command_line('capacity_model.py')}`.",
        "",
        "The measured points (mixed scenario, 1 KiB bodies; CPU per message with each tier's "
        "idle CPU over the same span taken away):",
        "",
        *point_lines(points),
        "",
        "The check: point 2's CPU, predicted from point 1's cost per message:",
        "",
        *check_lines(basis, checked),
        "",
        "The sizing, from point 1's costs (assumptions below the table):",
        "",
        *model_lines(basis),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000,
                        help="messages through the mixed scenario per point")
    parser.add_argument("--warmup-messages", type=int, default=4_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=300.0,
                        help="at most this long per scenario")
    parser.add_argument("--idle-seconds", type=float, default=20.0,
                        help="how long each tier's idle CPU is read before a point")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cqs-capacity-") as work:
        points, release = run(args, Path(work))
    text = report(points, (time.monotonic() - started) / 60, release)
    print(text)
    if any(point.problems for point in points):
        print("NOT A RESULT: " + "; ".join(p.problems for p in points if p.problems),
              file=sys.stderr)
        return 1
    if args.write_docs:
        SECTION.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
