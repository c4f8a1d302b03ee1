"""The cache tier on one server, on cqs's ring of three servers, and on a Redis Cluster of
three primaries (and three replicas): throughput and CPU per message, every id checked.

Drives the real `RedisMessageCache` (what each API process runs) with the cache's share of
SQS traffic: `--tasks` concurrent loops, each adding one message to one of `--queues` ready
queues, receiving up to ten and deleting what it got (one `delete` script per batch), for
`--seconds`. No Cassandra and no HTTP: the figures are the cache tier's, so they tell the
topologies apart instead of measuring the store. For each topology it reports messages
through per second, Redis CPU per 1,000 messages (user + system time of every redis-server
of the topology, replicas included, from /proc) and the client's CPU per 1,000 messages
(this process: the adapter and redis-py, the part of an API process the topology changes).

Every message is checked: each id added must be received once and deleted; a lost id or a
second delivery fails the run (exit 1). Servers are started here on loopback ports.

    python benchmarks/cache_topologies.py --seconds 15 --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.report import DocSection, command_line, git_commit, machine_summary  # noqa: E402
from cqs.domain.model import Message, QueueIdentity  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402
from cqs.redis_cache.cache import RedisMessageCache  # noqa: E402
from tests.fixtures.redis_cluster import LocalRedisCluster  # noqa: E402

SECTION = DocSection(ROOT / "docs" / "scale.md", "cache_topologies", "Scale and resilience")
RETENTION_MS = 4 * 24 * 3600 * 1000
VISIBILITY_MS = 600_000  # nothing comes back during a run: a second delivery is a defect


@dataclass
class Topology:
    name: str
    urls: list[str]
    pids: list[int]


@dataclass
class Result:
    name: str
    messages: int
    seconds: float
    redis_cpu_s: float
    client_cpu_s: float
    lost: int
    duplicates: int

    def row(self) -> str:
        per_k = 1000 / max(1, self.messages)
        return (
            f"| {self.name} | {self.messages / self.seconds:,.0f} | "
            f"{self.redis_cpu_s * per_k * 1000:.0f} | {self.client_cpu_s * per_k * 1000:.0f} | "
            f"{self.lost} | {self.duplicates} |"
        )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks


@contextmanager
def topologies(work: Path, which: list[str]) -> Iterator[list[Topology]]:
    started: list[EmbeddedRedis] = []
    cluster: LocalRedisCluster | None = None
    found: list[Topology] = []
    try:
        if "one" in which:
            server = EmbeddedRedis(work / "one")
            server.start()
            started.append(server)
            found.append(Topology("one server", [server.url], [server.pid]))
        if "ring" in which:
            ring = [EmbeddedRedis(work / f"ring-{i}") for i in range(3)]
            for server in ring:
                server.start()
            started += ring
            found.append(Topology("ring of 3 servers", [s.url for s in ring],
                                  [s.pid for s in ring]))  # fmt: skip
        if "cluster" in which:
            cluster = LocalRedisCluster(work / "cluster")
            cluster.start()
            found.append(Topology("cluster, 3 primaries + 3 replicas", cluster.urls,
                                  [n.server.pid for n in cluster.nodes]))  # fmt: skip
        yield found
    finally:
        for server in started:
            server.stop()
        if cluster is not None:
            cluster.stop()


def message(number: int) -> Message:
    body = f"m-{number}-" + "x" * 200
    return Message(
        message_id=str(uuid.uuid1()), body=body,
        md5_of_body=hashlib.md5(body.encode()).hexdigest(),
        sent_timestamp_ms=int(time.time() * 1000) - 1000,
        visible_at_ms=int(time.time() * 1000) - 1000, sender_id="AIDABENCH",
    )  # fmt: skip


async def measure(topology: Topology, queues: int, tasks: int, seconds: float) -> Result:
    cache = RedisMessageCache(topology.urls, socket_timeout=5.0)
    names = [QueueIdentity("000000000000", "us-east-1", f"bench-{uuid.uuid4().hex[:8]}")
             for _ in range(queues)]  # fmt: skip
    for queue in names:
        assert await cache.begin_fill(queue, "bench", 60_000)
        assert await cache.finish_fill(queue, "bench")
    added: set[str] = set()
    received: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    counter = iter(range(10**9))

    async def loop(index: int) -> None:
        queue = names[index % queues]
        while time.monotonic() < deadline:
            sent = message(next(counter))
            await cache.add(queue, [sent], int(time.time() * 1000))
            added.add(sent.message_id)
            await take(queue)

    async def take(queue: QueueIdentity) -> int:
        now = int(time.time() * 1000)
        nonces = [uuid.uuid4().hex for _ in range(10)]
        outcome = await cache.receive(queue, 10, VISIBILITY_MS, now, RETENTION_MS, nonces)
        deliveries = outcome.deliveries if outcome is not None else []
        for delivery in deliveries:
            received[delivery.message.message_id] += 1
        if deliveries:
            await cache.delete_many(
                queue, [(d.message.message_id, d.receipt_nonce) for d in deliveries]
            )
        return len(deliveries)

    redis_before = sum(cpu_seconds(pid) for pid in topology.pids)
    client_before = time.process_time()
    started = time.monotonic()
    await asyncio.gather(*(loop(index) for index in range(tasks)))
    elapsed = time.monotonic() - started
    client_cpu = time.process_time() - client_before
    redis_cpu = sum(cpu_seconds(pid) for pid in topology.pids) - redis_before
    for queue in names:  # what is left: drained, not timed
        while await take(queue):
            pass
    await cache.close()
    lost = len(added - set(received))
    duplicates = sum(count - 1 for count in received.values() if count > 1)
    return Result(topology.name, len(added), elapsed, redis_cpu, client_cpu, lost, duplicates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--queues", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--topologies", default="one,ring,cluster")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="cqs-topologies-") as work, \
            topologies(Path(work), args.topologies.split(",")) as found:
        for topology in found:
            results.append(asyncio.run(measure(topology, args.queues, args.tasks, args.seconds)))
            print(results[-1].row(), flush=True)
    table = "\n".join([
        "| topology | messages/s (add + receive + delete) | Redis CPU ms per 1,000 msgs "
        "| client CPU ms per 1,000 msgs | lost | duplicates |",
        "|---|---:|---:|---:|---:|---:|",
        *(result.row() for result in results),
    ])
    text = (
        f"Measured by `{command_line('cache_topologies.py')}` on {machine_summary()}, "
        f"commit {git_commit()}; {args.tasks} concurrent loops over {args.queues} queues, "
        f"{args.seconds:.0f} s per topology, all servers on this one machine.\n\n{table}"
    )
    print(text)
    if args.write_docs:
        SECTION.write(text)
    return 1 if any(r.lost or r.duplicates for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
