"""What consumer groups cost a send: throughput, latency and Cassandra bytes per message
with 0, 1, 4 and 16 groups on the queue, every message id checked in every group.

For each group count: a fresh standard queue with that many unfiltered groups; `--senders`
threads send `--messages` messages (SendMessageBatch of 10, a random 256-character body
and two attributes) and time each call; then Cassandra flushes its memtables (nodetool
over JMX) and the growth of the keyspace's SSTable data files, divided by the messages
sent, is the bytes per message. Once every group count has sent, the queue and each group
are drained (receive + delete) into a delivery ledger of their own, which must hold every
acknowledged id once: lost messages and early duplicates are reported per row.

Starts its own embedded Redis, embedded Cassandra (with JMX on a free port, for the flush)
and `cqs serve`. `--write-docs` puts the table in docs/performance.md.

    python benchmarks/consumer_group_sends.py --write-docs
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import urllib3  # noqa: E402
from botocore.auth import SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.delivery_ledger import (  # noqa: E402
    Acknowledged,
    DeleteOutcome,
    Delivery,
    DeliveryLedger,
    percentile,
)
from benchmarks.harness.report import host_lines, write_section  # noqa: E402
from benchmarks.harness.servers import start_server  # noqa: E402
from cqs.embedded.cassandra import JPMS_FLAGS, EmbeddedCassandra  # noqa: E402
from cqs.embedded.cassandra5_install import installed_lib  # noqa: E402
from cqs.embedded.ports import free_port  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402

BEGIN = "<!-- consumer-group-sends:begin -->"
END = "<!-- consumer-group-sends:end -->"
BODY_BYTES = 256  # random text: SSTables are compressed, so a repetitive body would hide its size
ATTRIBUTES = {
    "kind": {"DataType": "String", "StringValue": "order"},
    "amount": {"DataType": "Number", "StringValue": "42"},
}
VISIBILITY_SECONDS = 300  # long enough that no redelivery is expected while draining


@dataclass(frozen=True)
class Row:
    groups: int
    messages: int
    seconds: float
    batch_p50_ms: float
    batch_p99_ms: float
    bytes_per_message: float
    lost: int  # summed over the queue and its groups
    early_duplicates: int
    changed_bodies: int
    errors: int


def extension(endpoint: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
    request = AWSRequest(
        method="POST", url=endpoint + "/", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/x-amz-json-1.0",
                 "X-Amz-Target": f"CqsExtensions.{action}"},
    )
    SigV4Auth(Credentials("x", "x"), "sqs", "us-east-1").add_auth(request)
    reply = urllib3.request("POST", request.url, body=request.body,
                            headers=dict(request.headers.items()))
    if reply.status != 200:
        raise RuntimeError(f"{action}: {reply.status} {reply.data[:300]!r}")
    return dict(json.loads(reply.data))


def nodetool(jmx_port: int, *command: str) -> None:
    subprocess.run(
        ["java", *JPMS_FLAGS, "-cp", f"{installed_lib()}/*", "org.apache.cassandra.tools.NodeTool",
         "-h", "127.0.0.1", "-p", str(jmx_port), *command],
        check=True, capture_output=True, timeout=120,
    )


def flush(cassandra: EmbeddedCassandra, jmx_port: int, keyspace: str) -> None:
    """Flush the memtables, with compaction off: a compaction's output sits beside its
    inputs until they are removed, which would count their bytes twice."""
    nodetool(jmx_port, "disableautocompaction", keyspace)
    nodetool(jmx_port, "flush", keyspace)


def data_bytes(cassandra: EmbeddedCassandra, keyspace: str) -> int:
    folder = cassandra.data_dir / "data" / "data" / keyspace  # storagedir/data/<keyspace>
    return sum(f.stat().st_size for f in folder.rglob("*-Data.db")) if folder.exists() else 0


def random_body() -> str:
    return base64.b64encode(os.urandom(BODY_BYTES * 3 // 4)).decode()


def send_all(endpoint: str, queue_url: str, messages: int, senders: int,
             ledger: DeliveryLedger) -> tuple[float, list[float], int]:
    lock = threading.Lock()
    durations: list[float] = []
    errors = 0
    batches = iter(range(messages // 10))

    def sender() -> None:
        nonlocal errors
        client = sqs_client(endpoint)
        while True:
            with lock:
                number = next(batches, None)
            if number is None:
                return
            bodies = [random_body() for _ in range(10)]
            entries = [{"Id": str(i), "MessageBody": bodies[i], "MessageAttributes": ATTRIBUTES}
                       for i in range(10)]
            asked = time.time()
            try:
                reply = client.send_message_batch(QueueUrl=queue_url, Entries=entries)
            except Exception:
                with lock:
                    errors += 1
                continue
            answered = time.time()
            with lock:
                durations.append(answered - asked)
                errors += len(reply.get("Failed", []))
                for entry in reply.get("Successful", []):
                    ledger.record_acknowledged(Acknowledged(
                        entry["MessageId"], bodies[int(entry["Id"])], queue_url, asked, answered
                    ))

    started = time.monotonic()
    threads = [threading.Thread(target=sender) for _ in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started, durations, errors


def drain(endpoint: str, url: str, ledger: DeliveryLedger) -> None:
    """Receive + delete until every id came and then 3 quiet seconds passed (or 300 s)."""
    client = sqs_client(endpoint, read_timeout=40)
    deadline = time.monotonic() + 300
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        asked = time.time()
        reply = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                       VisibilityTimeout=VISIBILITY_SECONDS)
        answered = time.time()
        got = reply.get("Messages", [])
        if not got:
            quiet_since = quiet_since or time.monotonic()
            if ledger.undelivered_count() == 0 and time.monotonic() - quiet_since > 3:
                return
            continue
        quiet_since = None
        for message in got:
            ledger.record_delivery(Delivery(message["MessageId"], message["Body"], url, asked,
                                            answered, VISIBILITY_SECONDS))
        deleted = client.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
        ])
        done = time.time()
        for entry in deleted.get("Successful", []):
            ledger.record_delete(DeleteOutcome(got[int(entry["Id"])]["MessageId"], asked, done))


@dataclass
class Round:
    """One group count's sends, measured; its consumers are drained after every round ran
    (deletes leave tombstones that compaction could trade against the next round's bytes)."""

    groups: int
    urls: list[str]  # the queue's, then its groups'
    sent: DeliveryLedger
    seconds: float
    durations: list[float]
    grown_bytes: int
    errors: int


def send_round(endpoint: str, cassandra: EmbeddedCassandra, jmx_port: int, keyspace: str,
               groups: int, messages: int, senders: int) -> Round:
    sqs = sqs_client(endpoint)
    queue_url = sqs.create_queue(QueueName=f"groups-{groups}-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    urls = [queue_url] + [
        extension(endpoint, "CreateConsumerGroup",
                  {"QueueUrl": queue_url, "GroupName": f"g{n}"})["QueueUrl"]
        for n in range(groups)
    ]
    flush(cassandra, jmx_port, keyspace)
    before = data_bytes(cassandra, keyspace)
    sent = DeliveryLedger()
    seconds, durations, errors = send_all(endpoint, queue_url, messages, senders, sent)
    flush(cassandra, jmx_port, keyspace)
    return Round(groups, urls, sent, seconds, durations,
                 data_bytes(cassandra, keyspace) - before, errors)


def check_round(endpoint: str, measured: Round) -> Row:
    """Drain the queue and each group: every consumer must see every acknowledged id once."""
    lost = early = changed = 0
    for url in measured.urls:
        ledger = DeliveryLedger()
        for acknowledged in measured.sent.acknowledged:
            ledger.record_acknowledged(acknowledged)
        drain(endpoint, url, ledger)
        verdict = ledger.verdict()
        lost += len(verdict.lost)
        early += verdict.unexpected_duplicates
        changed += verdict.changed_bodies
    sqs_client(endpoint).delete_queue(QueueUrl=measured.urls[0])
    count = measured.sent.sent_count()
    return Row(measured.groups, count, measured.seconds,
               percentile(measured.durations, 0.5) * 1000,
               percentile(measured.durations, 0.99) * 1000,
               measured.grown_bytes / max(1, count), lost, early, changed, measured.errors)


def report(rows: list[Row], senders: int, release: str) -> str:
    lines = [
        BEGIN,
        "### Consumer groups: send cost and Cassandra bytes per message",
        "",
        "Generated by `python benchmarks/consumer_group_sends.py --write-docs` on an embedded "
        f"Cassandra {release}: a standard "
        f"queue with N unfiltered consumer groups; {senders} threads send SendMessageBatch "
        "of 10 (a random 256-character body, two attributes); bytes per message are the growth of the "
        "keyspace's SSTable data files after a flush, divided by the messages sent (all rounds "
        "send before any is drained, and compaction is off, so neither a delete's tombstone nor "
        "a compaction falls in a measurement). Then the "
        "queue and every group are drained and every id checked (lost, early duplicates: "
        "summed over the queue and its groups). An unreported round runs first (warm-up).",
        "",
        *host_lines(),
        "",
        "| groups | messages | messages/s | batch p50 ms | batch p99 ms | Cassandra bytes/message"
        " | lost | early duplicates | changed bodies | errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.groups} | {row.messages} | {row.messages / row.seconds:.0f} |"
            f" {row.batch_p50_ms:.1f} | {row.batch_p99_ms:.1f} | {row.bytes_per_message:.0f} |"
            f" {row.lost} | {row.early_duplicates} | {row.changed_bodies} | {row.errors} |"
        )
    lines.append(END)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="0,1,4,16")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cqs-groups-bench-"))
    jmx_port = free_port()
    cassandra = EmbeddedCassandra(work / "cassandra", jvm_options=[
        f"-Dcom.sun.management.jmxremote.port={jmx_port}",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
        "-Djava.rmi.server.hostname=127.0.0.1",
    ])
    redis = EmbeddedRedis(work / "redis")
    server = None
    keyspace = "bench_" + uuid.uuid4().hex[:10]
    try:
        redis.start()
        cassandra.start()
        server, endpoint, _log = start_server(
            redis.url, cassandra.contact_point, keyspace, work, ["--log-level", "WARNING"]
        )
        # An unreported first round: the JVM's JIT, the connections and the first
        # memtables would otherwise weigh on whichever row came first.
        send_round(endpoint, cassandra, jmx_port, keyspace, 0, args.messages, args.senders)
        rounds = [
            send_round(endpoint, cassandra, jmx_port, keyspace, int(n), args.messages,
                       args.senders)
            for n in args.groups.split(",")
        ]
        rows = []
        for measured in rounds:
            rows.append(check_round(endpoint, measured))
            print(rows[-1], flush=True)
        section = report(rows, args.senders, cassandra.release_version)
        print(section)
        if args.write_docs:
            write_section(ROOT / "docs" / "performance.md", BEGIN, END, section, "Performance")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        redis.stop()
        cassandra.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
