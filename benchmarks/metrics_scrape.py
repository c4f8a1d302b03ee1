"""What a `/metrics` scrape of 1,000 queues costs Redis, Cassandra and the server.

1. Starts an embedded redis-server and Cassandra (unless `--redis-url` / `--cassandra-host`
   are given) and a real `cqs serve` process on a fresh keyspace.
2. Creates `--queues` queues through boto3 and sends one message to every tenth queue.
3. Cold scrapes: waits out the per-queue statistics cache (2 s) before each scrape and
   measures, per scrape: wall time seen by the client, the server's own read time
   (`cqs_queue_stats_read_duration_seconds`), Redis commands (INFO commandstats deltas of the
   commands a scrape sends), Redis CPU, Cassandra statements (`cqs_backend_...` counters),
   response size and series count.
4. Warm scrapes: back-to-back scrapes within the cache's lifetime.
5. Prints a Markdown table, and with `--write-docs` puts it into docs/metrics.md.

    python benchmarks/metrics_scrape.py --queues 1000 --write-docs
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import boto3  # noqa: E402
import redis  # noqa: E402
from botocore.config import Config  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402
from cqs.embedded.ports import free_port  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402

DOC = ROOT / "docs" / "metrics.md"
BEGIN = "<!-- metrics_scrape:begin -->"
END = "<!-- metrics_scrape:end -->"
SCRAPE_COMMANDS = ("get", "llen", "zcard", "lindex")
STATS_TTL_SECONDS = 2.0


def start_server(redis_url: str, cassandra: str, workers: int, work_dir: Path) -> tuple[
    subprocess.Popen[bytes], str
]:
    port = free_port()
    log = (work_dir / "cqs.log").open("wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "cqs", "serve", "--port", str(port), "--redis-urls", redis_url,
         "--cassandra-hosts", cassandra, "--cassandra-keyspace", "scrape_" + uuid.uuid4().hex[:8],
         "--data-dir", str(work_dir / "data"), "--receipt-secret", "bench",
         "--workers", str(workers), "--log-level", "WARNING"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/ready", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("cqs serve did not become ready; see " + str(work_dir / "cqs.log"))


def make_queues(url: str, count: int) -> None:
    sqs = boto3.client(
        "sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
        aws_secret_access_key="x", config=Config(max_pool_connections=32),
    )

    def make(index: int) -> None:
        queue_url = sqs.create_queue(QueueName=f"scrape-{index:05d}")["QueueUrl"]
        if index % 10 == 0:
            sqs.send_message(QueueUrl=queue_url, MessageBody="x" * 100)

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(make, range(count)))


def command_calls(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def redis_cpu(client: redis.Redis) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


def scrape(url: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(url + "/metrics", timeout=60) as response:
        body: bytes = response.read()
    return time.perf_counter() - started, body


def sample_sum(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def catalog_reads(text: str) -> float:
    """Reads of the queues table: the only Cassandra statements a scrape causes (the queue
    names, kept 10 s); other background work (move tasks, the 30 s trim) is left out."""
    return sample_sum(
        text, "cqs_backend_request_duration_seconds_count",
        backend="cassandra", operation="select queues",
    )


def measure(url: str, client: redis.Redis, cold: bool, rounds: int) -> dict[str, Any]:
    times: list[float] = []
    reads: list[float] = []
    commands: list[int] = []
    cpu: list[float] = []
    cassandra: list[float] = []
    size = series = 0
    previous_cassandra = catalog_reads(scrape(url)[1].decode())
    for _ in range(rounds):
        if cold:
            time.sleep(STATS_TTL_SECONDS + 0.1)
        calls_before, cpu_before = command_calls(client), redis_cpu(client)
        elapsed, body = scrape(url)
        calls_after, cpu_after = command_calls(client), redis_cpu(client)
        text = body.decode()
        times.append(elapsed)
        reads.append(sample_sum(text, "cqs_queue_stats_read_duration_seconds"))
        commands.append(sum(calls_after.get(c, 0) - calls_before.get(c, 0) for c in SCRAPE_COMMANDS))
        cpu.append(cpu_after - cpu_before)
        now_cassandra = catalog_reads(text)
        cassandra.append(now_cassandra - previous_cassandra)
        previous_cassandra = now_cassandra
        size = len(body)
        series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return {
        "time_ms": statistics.median(times) * 1000,
        "time_max_ms": max(times) * 1000,
        "read_ms": statistics.median(reads) * 1000,
        "commands": statistics.median(commands),
        "redis_cpu_ms": statistics.median(cpu) * 1000,
        "cassandra": statistics.median(cassandra),
        "bytes": size,
        "series": series,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis-url")
    parser.add_argument("--cassandra-host")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()

    work_dir = Path(tempfile.mkdtemp(prefix="cqs-scrape-"))
    started: list[Any] = []
    try:
        redis_url = args.redis_url
        if not redis_url:
            embedded_redis = EmbeddedRedis(work_dir / "redis")
            embedded_redis.start()
            started.append(embedded_redis)
            redis_url = embedded_redis.url
        cassandra = args.cassandra_host
        if not cassandra:
            node = EmbeddedCassandra(work_dir / "cassandra")
            node.start()
            started.append(node)
            cassandra = node.contact_point
        process, url = start_server(redis_url, cassandra, args.workers, work_dir)
        try:
            began = time.monotonic()
            make_queues(url, args.queues)
            print(f"created {args.queues} queues in {time.monotonic() - began:.1f} s")
            client = redis.Redis.from_url(redis_url)
            cold = measure(url, client, cold=True, rounds=args.rounds)
            warm = measure(url, client, cold=False, rounds=args.rounds * 4)
        finally:
            process.terminate()
            process.wait(timeout=30)
    finally:
        for service in reversed(started):
            service.stop()

    rows = [
        "| scrape | client time (median / max) | server's per-queue read | Redis commands | "
        "Redis CPU | Cassandra reads | response | series |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, result in (("cold (statistics re-read)", cold), ("warm (within 2 s)", warm)):
        rows.append(
            f"| {label} | {result['time_ms']:.1f} / {result['time_max_ms']:.1f} ms | "
            f"{result['read_ms']:.1f} ms | {result['commands']:.0f} | "
            f"{result['redis_cpu_ms']:.1f} ms | {result['cassandra']:.1f} | "
            f"{result['bytes'] / 1024:.0f} KiB | {result['series']} |"
        )
    machine = (
        f"{args.queues} queues (one message in every tenth), {args.workers} worker "
        f"process(es), {args.rounds} cold and {args.rounds * 4} warm scrapes, medians; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load at start "
        f"{os.getloadavg()[0]:.2f}; Redis and Cassandra embedded on the same machine."
    )
    table = "\n".join([*rows, "", machine])
    print(table)
    if args.write_docs:
        text = DOC.read_text()
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        DOC.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")


if __name__ == "__main__":
    main()
