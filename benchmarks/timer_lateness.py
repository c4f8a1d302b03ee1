"""How late do timer messages arrive, with 100k of them scheduled? (issue #19, docs/scale.md)

Starts an embedded Redis, an embedded Cassandra and `cqs serve` with a short timer horizon
(`--timer-horizon-seconds`, default here 180, so the run takes minutes rather than the
default horizon's quarter hour), then:

1. sender processes schedule N messages (SendMessageBatch, `cqs.DeliverAt` as epoch
   seconds), due evenly over a window that starts `--first-due` seconds after the start;
   every acknowledged id is recorded with its due time;
2. Redis's `used_memory` is read before and after: scheduled messages must not cost Redis
   memory (they wait in Cassandra);
3. consumer processes long-poll, record each delivery (wall clock, the server's clock on
   this machine) and delete it, until every id has arrived or a deadline passes.

Reports lateness (first delivery minus due time) p50, p99 and max; every id checked: lost
(never delivered), early (delivered before its due time), and duplicates (by the delivery
ledger's rules: a repeat before the visibility timeout ran out is unexpected).

    python benchmarks/timer_lateness.py --messages 100000 --write-docs
"""

from __future__ import annotations

import argparse
import multiprocessing
import shlex
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from redis import Redis  # noqa: E402

from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.delivery_ledger import (  # noqa: E402
    Acknowledged,
    DeleteOutcome,
    Delivery,
    DeliveryLedger,
    percentile,
)
from benchmarks.harness.report import host_lines, write_section  # noqa: E402
from benchmarks.harness.servers import (  # noqa: E402
    cassandra_summary,
    shipped_cassandra,
    start_server,
)
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402

DOC = ROOT / "docs" / "scale.md"
BEGIN = "<!-- timer_lateness:begin -->"
END = "<!-- timer_lateness:end -->"
VISIBILITY = 120


def send_share(endpoint: str, url: str, ids: range, first_due: float, window: float,
               total: int) -> tuple[DeliveryLedger, dict[str, float]]:
    sqs = sqs_client(endpoint, attempts=3)
    ledger = DeliveryLedger()
    due_of: dict[str, float] = {}
    for start in range(ids.start, ids.stop, 10):
        entries = []
        for i in range(start, min(start + 10, ids.stop)):
            due = round(first_due + window * i / total, 3)
            entries.append({"Id": str(i), "MessageBody": f"t{i}", "MessageAttributes": {
                "cqs.DeliverAt": {"DataType": "Number", "StringValue": f"{due:.3f}"},
            }})
        asked = time.time()
        reply = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        answered = time.time()
        for failed in reply.get("Failed", []):
            ledger.record_error("SendMessageBatch", failed["Code"])
        for entry in reply.get("Successful", []):
            i = int(entry["Id"])
            ledger.record_acknowledged(
                Acknowledged(entry["MessageId"], f"t{i}", url, asked, answered)
            )
            due_of[entry["MessageId"]] = round(first_due + window * i / total, 3)
    return ledger, due_of


def consume(endpoint: str, url: str, expected: int, deadline: float,
            done: Any) -> DeliveryLedger:
    sqs = sqs_client(endpoint, attempts=3, read_timeout=30)
    ledger = DeliveryLedger()
    while time.time() < deadline and not done.is_set():
        asked = time.time()
        try:
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2,
                VisibilityTimeout=VISIBILITY,
            ).get("Messages", [])
        except Exception as error:  # counted; the run goes on
            ledger.record_error("ReceiveMessage", type(error).__name__)
            continue
        answered = time.time()
        for m in messages:
            ledger.record_delivery(
                Delivery(m["MessageId"], m["Body"], url, asked, answered, VISIBILITY)
            )
        if messages:
            asked = time.time()
            reply = sqs.delete_message_batch(QueueUrl=url, Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)
            ])
            answered = time.time()
            for entry in reply.get("Successful", []):
                message_id = messages[int(entry["Id"])]["MessageId"]
                ledger.record_delete(DeleteOutcome(message_id, asked, answered))
    return ledger


def run(args: argparse.Namespace) -> tuple[str, str]:
    """The table's row, and the Cassandra it ran on (for the heading)."""
    work = Path(tempfile.mkdtemp(prefix="timer-lateness-"))
    redis = EmbeddedRedis(work / "redis")
    cassandra = shipped_cassandra(work / "cassandra")
    redis.start()
    cassandra.start()
    server = None
    try:
        server, endpoint, log_path = start_server(
            redis.url, cassandra.contact_point, "bench_" + uuid.uuid4().hex[:10], work,
            ["--log-level", "WARNING", "--timer-horizon-seconds", str(args.horizon),
             "--timer-promotion-lead-seconds", str(args.lead)],
        )
        sqs = sqs_client(endpoint)
        url = sqs.create_queue(QueueName="timers-" + uuid.uuid4().hex[:8])["QueueUrl"]
        memory = Redis.from_url(redis.url)
        redis_before = int(memory.info("memory")["used_memory"])
        started = time.time()
        first_due = started + args.first_due
        total = args.messages
        shares = [range(p * total // args.senders, (p + 1) * total // args.senders)
                  for p in range(args.senders)]
        with multiprocessing.Pool(args.senders) as pool:
            sent = pool.starmap(send_share, [
                (endpoint, url, share, first_due, args.window, total) for share in shares
            ])
        send_seconds = time.time() - started
        ledger = DeliveryLedger()
        due_of: dict[str, float] = {}
        for part, dues in sent:
            ledger.absorb(part)
            due_of.update(dues)
        redis_after = int(memory.info("memory")["used_memory"])
        scheduled = int(sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["cqs.ApproximateNumberOfScheduledMessages"]
        )["Attributes"]["cqs.ApproximateNumberOfScheduledMessages"])
        print(f"sent {ledger.sent_count()} in {send_seconds:.0f} s; scheduled {scheduled}; "
              f"redis used_memory {redis_before} -> {redis_after}", flush=True)
        deadline = first_due + args.window + args.drain
        with multiprocessing.Manager() as manager:
            done = manager.Event()
            with multiprocessing.Pool(args.consumers) as pool:
                pending = pool.starmap_async(consume, [
                    (endpoint, url, total, deadline, done) for _ in range(args.consumers)
                ])
                while time.time() < deadline and not pending.ready():
                    time.sleep(5)
                    left = int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
                        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
                        "cqs.ApproximateNumberOfScheduledMessages",
                    ])["Attributes"]["cqs.ApproximateNumberOfScheduledMessages"])
                    if time.time() > first_due + args.window + 5 and left == 0:
                        time.sleep(10)  # the last due ones: received and deleted
                        done.set()
                for part in pending.get():
                    ledger.absorb(part)
        verdict = ledger.verdict()
        first_at: dict[str, float] = {}
        for delivery in ledger.deliveries:
            first_at[delivery.message_id] = min(
                first_at.get(delivery.message_id, delivery.answered_at), delivery.answered_at
            )
        lateness = [first_at[mid] - due_of[mid] for mid in first_at if mid in due_of]
        # Early: the answer left the server before the due time (its request was asked
        # after it, so the server clock, this machine's, had passed it: none may count).
        early = [mid for mid in first_at if mid in due_of and first_at[mid] < due_of[mid]]
        row = (
            f"| {total:,} | {ledger.sent_count():,} | {scheduled:,} | {args.window} s |"
            f" {percentile(lateness, 0.5):.2f} s | {percentile(lateness, 0.99):.2f} s |"
            f" {max(lateness, default=0.0):.2f} s | {len(verdict.lost)} | {len(early)} |"
            f" {verdict.unexpected_duplicates} | {verdict.expected_duplicates} |"
            f" {(redis_after - redis_before) / 1024:+,.0f} KiB |"
        )
        print(row, flush=True)
        if verdict.lost:
            print("lost (first 10):", list(verdict.lost)[:10], f"see {log_path}")
        return row, cassandra_summary(cassandra)
    finally:
        if server is not None and server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
        redis.stop()
        cassandra.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=180)
    parser.add_argument("--lead", type=float, default=60.0)
    parser.add_argument("--first-due", type=float, default=300.0,
                        help="seconds after the start when the first message is due")
    parser.add_argument("--window", type=int, default=300,
                        help="seconds over which the due times are spread")
    parser.add_argument("--drain", type=float, default=120.0)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    row, store = run(args)
    if args.write_docs:
        command = "python benchmarks/timer_lateness.py " + shlex.join(sys.argv[1:])
        section = "\n".join([
            BEGIN,
            "## 4. Timer messages: promotion lateness with 100k scheduled",
            "",
            "Timer messages due beyond the horizon wait only in Cassandra's"
            " `scheduled_messages` table; every API process runs a promotion round each"
            " second that, under a per-queue lease, moves what is due within the lead time"
            " into the message table and the cache's delayed set, from where the"
            " revisibility sweep (every 0.1 s) makes each visible at its due time. So a"
            " message is late by the sweep interval plus the consumers' own backlog, as"
            " long as promotion keeps ahead of the due times by the lead. Scheduling 100k"
            " messages leaves Redis's memory where it was (the last column).",
            "",
            f"`{command}` (one `cqs serve` over an embedded Redis and an embedded"
            f" {store}; horizon {args.horizon} s, promotion lead {args.lead:.0f} s,"
            f" {args.senders} sender and {args.consumers} consumer processes on the same"
            " machine):",
            "",
            *host_lines(),
            "",
            "| scheduled | acknowledged | counted in the store | due over | lateness p50 |"
            " p99 | max | lost | early | unexpected duplicates | expected duplicates |"
            " Redis memory change from scheduling |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            row,
            "",
            "Lateness is the first delivery's answer (consumer's clock, the server's machine)"
            " minus the due time asked for; it includes the consumers' own backlog.",
            END,
        ])
        write_section(DOC, BEGIN, END, section, "Scale and resilience: measurements")


if __name__ == "__main__":
    main()
