"""What keeping consumed messages for replay costs a delete (cqs.ConsumedRetentionSeconds).

Two queues get the same load, in alternating rounds: `--messages` messages sent in batches
of 10, then drained by `--consumers` threads (ReceiveMessage of 10, DeleteMessageBatch of
what came back). One queue keeps nothing (the default, 0); the other keeps consumed
messages for an hour, so each delete also reads the message from Cassandra and writes its
copy into the consumed-messages table. Reported per setting: drain throughput (deleted
messages per second), DeleteMessageBatch latency (p50, p99), and the delivery ledger's
verdict (every id sent must be received and deleted; lost messages and duplicates
delivered before their visibility timeout are counted). For the keeping queue, the copies
are then counted through CqsExtensions.PeekConsumedMessages: every deleted id must be kept.

    python benchmarks/consumed_retention.py                       # an embedded server
    python benchmarks/consumed_retention.py --endpoint http://127.0.0.1:9324
    python benchmarks/consumed_retention.py --write-docs          # docs/performance.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.delivery_ledger import (  # noqa: E402
    Acknowledged,
    DeleteOutcome,
    Delivery,
    DeliveryLedger,
    Verdict,
    percentile,
)
from benchmarks.harness.report import host_lines, write_section  # noqa: E402
from benchmarks.harness.servers import target_server  # noqa: E402
from cqs.client import ExtensionClient  # noqa: E402

VISIBILITY = 60
BEGIN = "<!-- consumed-retention:begin -->"
END = "<!-- consumed-retention:end -->"


def send_all(sqs: Any, url: str, count: int, ledger: DeliveryLedger) -> None:
    for start in range(0, count, 10):
        entries = [{"Id": str(n), "MessageBody": f"m-{start + n}-" + "x" * 200}
                   for n in range(min(10, count - start))]
        asked = time.time()
        answer = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        answered = time.time()
        bodies = {e["Id"]: e["MessageBody"] for e in entries}
        for ok in answer.get("Successful", []):
            ledger.record_acknowledged(
                Acknowledged(ok["MessageId"], bodies[ok["Id"]], url, asked, answered))
        for failed in answer.get("Failed", []):
            ledger.record_error("SendMessageBatch", failed["Code"])


def drain(endpoint: str, url: str, consumers: int, ledger: DeliveryLedger) -> float:
    """Receive and delete until three empty receives in a row per consumer; seconds taken."""
    lock = threading.Lock()

    def consume() -> None:
        sqs = sqs_client(endpoint)
        empty = 0
        while empty < 3:
            asked = time.time()
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                      VisibilityTimeout=VISIBILITY, WaitTimeSeconds=1,
                                      MessageSystemAttributeNames=["ApproximateReceiveCount"])
            answered = time.time()
            messages = got.get("Messages", [])
            if not messages:
                empty += 1
                continue
            empty = 0
            delete_asked = time.time()
            answer = sqs.delete_message_batch(QueueUrl=url, Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                for n, m in enumerate(messages)])
            delete_answered = time.time()
            failed = {f["Id"]: f["Code"] for f in answer.get("Failed", [])}
            with lock:
                ledger.record_duration("DeleteMessageBatch", delete_answered - delete_asked)
                for n, m in enumerate(messages):
                    ledger.record_delivery(Delivery(
                        m["MessageId"], m["Body"], url, asked, answered, VISIBILITY,
                        int(m["Attributes"]["ApproximateReceiveCount"])))
                    ledger.record_delete(DeleteOutcome(
                        m["MessageId"], delete_asked, delete_answered, failed.get(str(n))))

    started = time.monotonic()
    threads = [threading.Thread(target=consume) for _ in range(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started - 3.0  # less the final empty long polls


def kept_copies(endpoint: str, url: str, since: float) -> set[str]:
    client = ExtensionClient(endpoint, "us-east-1", "x", "x")
    kept: set[str] = set()
    token = None
    while True:
        page = client.peek_consumed_messages(url, since, time.time() + 1, 100, token)
        kept.update(m["MessageId"] for m in page.get("Messages", []))
        token = page.get("NextToken")
        if not token:
            return kept


def run(args: argparse.Namespace) -> str:
    rows: dict[str, dict[str, list[float]]] = {"0": {}, "3600": {}}
    verdicts: dict[str, list[Verdict]] = {"0": [], "3600": []}
    missing_copies = 0
    with tempfile.TemporaryDirectory() as work, target_server(
        args.endpoint, None, 1, Path(work)
    ) as server:
        sqs = sqs_client(server.endpoint)
        for round_number in range(args.rounds):
            for retention in ("0", "3600"):
                url = sqs.create_queue(
                    QueueName=f"consumed-{retention}-{uuid.uuid4().hex[:8]}",
                    Attributes={"cqs.ConsumedRetentionSeconds": retention},
                )["QueueUrl"]
                ledger = DeliveryLedger()
                send_all(sqs, url, args.messages, ledger)
                since = time.time() - 1
                seconds = drain(server.endpoint, url, args.consumers, ledger)
                verdict = ledger.verdict()
                verdicts[retention].append(verdict)
                latencies = ledger.durations.get("DeleteMessageBatch", [])
                figures = rows[retention]
                figures.setdefault("rate", []).append(verdict.received / max(seconds, 0.001))
                figures.setdefault("p50", []).append(percentile(latencies, 0.5) * 1000)
                figures.setdefault("p99", []).append(percentile(latencies, 0.99) * 1000)
                if retention != "0":
                    deleted = {d.message_id for d in ledger.deletes if d.error is None}
                    missing_copies += len(deleted - kept_copies(server.endpoint, url, since))
                sqs.delete_queue(QueueUrl=url)
                print(f"round {round_number + 1} retention {retention}: "
                      f"{figures['rate'][-1]:.0f} deletes/s, p50 {figures['p50'][-1]:.1f} ms, "
                      f"p99 {figures['p99'][-1]:.1f} ms, lost {len(verdict.lost)}, "
                      f"early duplicates {verdict.unexpected_duplicates}", flush=True)
        description = server.description

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    lines = [
        f"{args.messages} messages per queue and round, {args.rounds} rounds, "
        f"{args.consumers} consumer threads (receive 10, DeleteMessageBatch), against "
        f"{description}. `python benchmarks/consumed_retention.py`",
        "",
        "| cqs.ConsumedRetentionSeconds | deletes/s | DeleteMessageBatch p50 | p99 | lost |"
        " early duplicates |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for retention, figures in rows.items():
        lost = sum(len(v.lost) for v in verdicts[retention])
        early = sum(v.unexpected_duplicates for v in verdicts[retention])
        lines.append(
            f"| {retention} | {mean(figures['rate']):.0f} | {mean(figures['p50']):.1f} ms |"
            f" {mean(figures['p99']):.1f} ms | {lost} | {early} |")
    lines += ["", f"Deleted messages without a kept copy (retention 3600): {missing_copies}.",
              "", *host_lines()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="a running cqs (default: an embedded one)")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--consumers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    report = run(args)
    print(report)
    if args.write_docs:
        section = (f"{BEGIN}\n## What keeping consumed messages costs a delete\n\n"
                   "Measured by `benchmarks/consumed_retention.py` (peek and replay, "
                   "docs/compatibility.md, Extensions).\n\n" + report + f"\n{END}")
        write_section(ROOT / "docs" / "performance.md", BEGIN, END, section, "Performance")


if __name__ == "__main__":
    main()
