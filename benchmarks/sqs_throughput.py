"""Throughput and latency of cqs through unmodified boto3 clients.

Scenarios: send (SendMessage), send-batch (SendMessageBatch of 10), receive+delete
(ReceiveMessage of up to 10 then DeleteMessageBatch), mixed (producers and consumers at
once), and the batch send and receive+delete on a FIFO queue (100 message groups, a unique
deduplication id per message). Each runs for a fixed time with N client threads, each with its own boto3 client.

By default it starts its own embedded Redis, embedded Cassandra and one `cqs serve` process;
`--endpoint` measures a running server instead. Results go to stdout and, with
`--write-docs`, replace the generated section of docs/performance.md.

    python benchmarks/sqs_throughput.py --seconds 20 --clients 8 --write-docs
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import machine_summary, sqs_client, start_server, write_section

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
BEGIN = "<!-- sqs_throughput:begin -->"
END = "<!-- sqs_throughput:end -->"


@dataclass
class Tally:
    messages: int = 0
    calls: int = 0
    errors: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    def record(self, messages: int, started: float) -> None:
        self.messages += messages
        self.calls += 1
        self.latencies_ms.append((time.perf_counter() - started) * 1000)


def client(endpoint: str) -> Any:
    return sqs_client(endpoint, pool=4)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def client_loop(scenario: str, endpoint: str, url: str, seconds: float) -> Tally:
    """One client process: its own boto3 client, calling `scenario` until time is up."""
    work = SCENARIOS[scenario](url)
    sqs = client(endpoint)
    tally = Tally()
    stop_at = time.perf_counter() + seconds
    while time.perf_counter() < stop_at:
        try:
            work(sqs, tally)
        except Exception:  # a failed call counts as an error, the run goes on
            tally.errors += 1
    return tally


def run_clients(count: int, seconds: float, scenario: str, endpoint: str, url: str) -> tuple[float, Tally]:
    """Run `count` client processes (not threads: one GIL would cap the clients) at once."""
    total = Tally()
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=count) as pool:
        parts = list(pool.map(client_loop, [scenario] * count, [endpoint] * count,
                              [url] * count, [seconds] * count))
    elapsed = time.perf_counter() - started
    for part in parts:
        total.messages += part.messages
        total.calls += part.calls
        total.errors += part.errors
        total.latencies_ms.extend(part.latencies_ms)
    return elapsed, total


BODY = "x" * 256


def send_one(url: str) -> Callable[[object, Tally], None]:
    def work(sqs: object, tally: Tally) -> None:
        started = time.perf_counter()
        sqs.send_message(QueueUrl=url, MessageBody=BODY)  # type: ignore[attr-defined]
        tally.record(1, started)
    return work


def send_batch(url: str) -> Callable[[object, Tally], None]:
    entries = [{"Id": str(i), "MessageBody": BODY} for i in range(10)]

    def work(sqs: object, tally: Tally) -> None:
        started = time.perf_counter()
        sqs.send_message_batch(QueueUrl=url, Entries=entries)  # type: ignore[attr-defined]
        tally.record(10, started)
    return work


def receive_delete(url: str) -> Callable[[object, Tally], None]:
    def work(sqs: object, tally: Tally) -> None:
        started = time.perf_counter()
        messages = sqs.receive_message(  # type: ignore[attr-defined]
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", [])
        if messages:
            sqs.delete_message_batch(  # type: ignore[attr-defined]
                QueueUrl=url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                         for i, m in enumerate(messages)],
            )
        tally.record(len(messages), started)
    return work


FIFO_GROUPS = 100


def send_batch_fifo(url: str) -> Callable[[object, Tally], None]:
    def work(sqs: object, tally: Tally) -> None:
        entries = [
            {"Id": str(i), "MessageBody": BODY, "MessageGroupId": f"g{uuid.uuid4().int % FIFO_GROUPS}",
             "MessageDeduplicationId": uuid.uuid4().hex}
            for i in range(10)
        ]
        started = time.perf_counter()
        sqs.send_message_batch(QueueUrl=url, Entries=entries)  # type: ignore[attr-defined]
        tally.record(10, started)
    return work


SCENARIOS: dict[str, Callable[[str], Callable[[object, Tally], None]]] = {
    "send": send_one,
    "send-batch": send_batch,
    "receive-delete": receive_delete,
    "send-batch-fifo": send_batch_fifo,
}


@dataclass
class Row:
    scenario: str
    clients: int
    seconds: float
    tally: Tally

    def line(self) -> str:
        rate = self.tally.messages / self.seconds
        lat = self.tally.latencies_ms
        return (f"| {self.scenario} | {self.clients} | {self.tally.messages} | {rate:,.0f} | "
                f"{statistics.median(lat) if lat else 0:.1f} | {percentile(lat, 0.95):.1f} | "
                f"{percentile(lat, 0.99):.1f} | {self.tally.errors} |")


def measure(endpoint: str, seconds: float, clients: int) -> list[Row]:
    admin = client(endpoint)
    rows: list[Row] = []

    def fresh_queue(label: str, fifo: bool = False) -> str:
        return admin.create_queue(  # type: ignore[attr-defined, no-any-return]
            QueueName=f"bench-{label}-{uuid.uuid4().hex[:8]}" + (".fifo" if fifo else ""),
            Attributes={"FifoQueue": "true"} if fifo else {},
        )["QueueUrl"]

    def row(label: str, count: int, scenario: str, url: str) -> Row:
        elapsed, tally = run_clients(count, seconds, scenario, endpoint, url)
        return Row(label, count, elapsed, tally)

    rows.append(row("SendMessage", clients, "send", fresh_queue("send")))
    batch_url = fresh_queue("batch")
    rows.append(row("SendMessageBatch (10)", clients, "send-batch", batch_url))
    # Drain what the batch senders left, through receive + delete-batch.
    rows.append(row("ReceiveMessage (10) + DeleteMessageBatch", clients, "receive-delete",
                    batch_url))
    mixed_url = fresh_queue("mixed")
    half = max(1, clients // 2)
    with ThreadPoolExecutor(max_workers=2) as both:
        producers = both.submit(row, "mixed: producers (SendMessageBatch 10)", half,
                                "send-batch", mixed_url)
        consumers = both.submit(row, "mixed: consumers (receive 10 + delete batch)", half,
                                "receive-delete", mixed_url)
        rows.extend([producers.result(), consumers.result()])
    fifo_url = fresh_queue("fifo", fifo=True)
    rows.append(row(f"FIFO SendMessageBatch (10, {FIFO_GROUPS} groups)", clients,
                    "send-batch-fifo", fifo_url))
    rows.append(row("FIFO ReceiveMessage (10) + DeleteMessageBatch", clients, "receive-delete",
                    fifo_url))
    return rows




def table(heading: str, rows: list[Row]) -> str:
    """The doc section's text: a line saying how it was measured, then one row a scenario."""
    return "\n".join([
        heading,
        "",
        "| scenario | client processes | messages | messages/s | median ms | p95 ms | p99 ms | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *[row.line() for row in rows],
    ])


def start_local_server(work: Path, server_args: list[str]) -> tuple[str, Callable[[], None]]:
    """Embedded Redis and Cassandra plus one `cqs serve`; returns its endpoint and a stop."""
    from cqs.embedded.cassandra import EmbeddedCassandra
    from cqs.embedded.redis_server import EmbeddedRedis

    redis = EmbeddedRedis(work / "redis")
    redis.start()
    cassandra = EmbeddedCassandra(work / "cassandra")
    cassandra.start()
    server, endpoint, _log = start_server(
        redis.url, cassandra.contact_point, "cqs_bench", work,
        ["--log-level", "WARNING", *server_args],
    )

    def stop() -> None:
        server.terminate()
        server.wait(timeout=20)
        redis.stop()
        cassandra.stop()

    return endpoint, stop




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", help="measure this running server instead of starting one")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="extra `cqs serve` argument, e.g. --server-arg=--event-loop=asyncio")
    args = parser.parse_args()
    def stop() -> None:
        pass

    with tempfile.TemporaryDirectory(prefix="cqs-bench-") as work:
        endpoint = args.endpoint
        if endpoint is None:
            endpoint, stop = start_local_server(Path(work), args.server_arg)
        try:
            rows = measure(endpoint, args.seconds, args.clients)
        finally:
            stop()
    command = " ".join(["python benchmarks/sqs_throughput.py", f"--seconds {args.seconds:g}",
                        f"--clients {args.clients}",
                        *(f"--server-arg={a}" for a in args.server_arg)])
    text = table(
        f"Measured {time.strftime('%Y-%m-%d')} on {machine_summary()}; one `cqs serve` process, "
        "embedded Redis and Cassandra on the same machine, boto3 clients in the "
        f"benchmark's client processes (which compete for the same 2 CPUs). Command: `{command}`.",
        rows,
    )
    print(text)
    if args.write_docs:
        write_section(DOC, BEGIN, END, f"{BEGIN}\n{text}\n{END}", "Performance")


if __name__ == "__main__":
    main()
