"""Messages per second through the `cqs` Spark data source: writer, peek and streaming source.

Starts an embedded Redis, an embedded Cassandra and one `cqs serve` process (or measures
`--endpoint`), and one local SparkSession (`--master`, default local[2]), then for each
receiver count in `--receivers`:

1. writer: `df.write.format("cqs")` of `--messages` rows (256-byte bodies, `--partitions`
   partitions, SendMessageBatch from the executors with `--send-parallelism` calls in flight
   per task) into a fresh queue;
2. peek: `spark.read.format("cqs")` of up to `--peek-messages` of them (receive, then
   release with ChangeMessageVisibility 0);
3. stream: `readStream.format("cqs")` with `trigger(availableNow=True)` into the `memory`
   sink, `--batch` messages per micro-batch, until the queue is drained (each message
   received on the driver, handed to a partition, deleted after its micro-batch is
   committed).

Every message is checked (issue 13) with a DeliveryLedger (benchmarks/harness/delivery_ledger.py),
keyed by body (every body is unique; the writer's message ids stay in its executors, and a
successful write job means every row's send was acknowledged): each row the stream put in
the memory sink is a delivery, asked for when the stream started and answered when it
ended, with the stream's `visibilityTimeout`. So a repeat within a stream shorter than that
timeout is an early duplicate; in a longer stream the ledger cannot tell early from expected
and counts it expected (the notes say so). The peek's deliveries are released on purpose,
so they are checked on their own (`PeekCheck`): no body twice in one peek, none the writer
did not write, and every message visible again after the release. A row whose queue lost
a message or delivered one unexpectedly is marked
"not a result" in the table and the script exits 1.

A small unrecorded round runs first (Python workers, imports). Wall time includes Spark's
job scheduling, as a user sees it. `--write-docs` replaces the generated section of
docs/performance.md.

    python benchmarks/spark_throughput.py --messages 20000 --write-docs
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from sqs_throughput import client, start_local_server  # noqa: E402

from benchmarks.harness.delivery_ledger import Acknowledged, Delivery, DeliveryLedger, Verdict  # noqa: E402
from benchmarks.harness.report import machine_summary, write_section  # noqa: E402

DOC = ROOT / "docs" / "performance.md"
BEGIN = "<!-- spark_throughput:begin -->"
END = "<!-- spark_throughput:end -->"
STREAM_VISIBILITY_SECONDS = 120  # the source's default, asked for explicitly


@dataclass(frozen=True)
class PeekCheck:
    """A peek receives and releases: every body it returned must be one the writer wrote,
    none twice (all of a peek's messages stay hidden until it releases them, so a repeat
    is a delivery before the visibility timeout), and afterwards the queue must show every
    message visible again (one not back is lost)."""

    in_queue: int  # messages in the queue before the peek
    rows: int
    distinct: int
    foreign: int  # bodies the writer did not write
    visible_after: int  # ApproximateNumberOfMessages once the release is done

    @property
    def lost(self) -> int:
        return max(0, self.in_queue - self.visible_after)

    @property
    def twice(self) -> int:
        return self.rows - self.distinct

    @property
    def clean(self) -> bool:
        return not (self.lost or self.twice or self.foreign)


@dataclass
class Row:
    scenario: str
    receivers: int | None
    messages: int
    seconds: float
    note: str = ""
    verdict: Verdict | None = None  # the queue's (None: not checked, e.g. the peek)
    peek: PeekCheck | None = None

    def line(self) -> str:
        rate = self.messages / self.seconds if self.seconds else 0.0
        receivers = "" if self.receivers is None else str(self.receivers)
        rate_cell = f"{rate:,.0f}"
        if self.verdict is not None and not self.verdict.clean:
            rate_cell = f"~~{rate_cell}~~ **not a result: {problems(self.verdict)}**"
        if self.peek is not None and not self.peek.clean:
            rate_cell = (f"~~{rate_cell}~~ **not a result: {self.peek.lost} lost, "
                         f"{self.peek.twice} twice, {self.peek.foreign} foreign**")
        if self.peek is not None:
            p = self.peek
            checked = f"{p.in_queue} | {p.distinct} | **{p.lost}** | — | **{p.twice}** | —"
        elif self.verdict is None:
            checked = " | ".join(["not checked"] * 6)
        else:
            v = self.verdict
            checked = (f"{v.sent} | {v.received} | **{len(v.lost)}** | {v.expected_duplicates} "
                       f"| **{v.early_duplicates}** | **{v.deliveries_after_delete}**")
        return (f"| {self.scenario} | {receivers} | {self.messages} | {self.seconds:.1f} | "
                f"{rate_cell} | {checked} | {self.note} |")


def problems(verdict: Verdict) -> str:
    parts = [
        f"{len(verdict.lost)} lost" if verdict.lost else "",
        f"{verdict.early_duplicates} early duplicates" if verdict.early_duplicates else "",
        f"{verdict.deliveries_after_delete} deliveries after delete"
        if verdict.deliveries_after_delete else "",
    ]
    return ", ".join(part for part in parts if part)


def body_of(row_id: int) -> str:
    """The body the writer's DataFrame gives row `row_id` (the selectExpr below)."""
    return f"{row_id:012d}" + "x" * 244


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def counts(sqs: Any, url: str) -> tuple[int, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]))


def measure(spark: Any, endpoint: str, args: argparse.Namespace) -> list[Row]:
    sqs = client(endpoint)
    options = {"endpoint": endpoint, "region": "us-east-1", "accessKeyId": "x",
               "secretAccessKey": "x"}
    # Unrecorded warm-up: Python workers, boto3 imports and the JIT of the first jobs.
    warm_up = argparse.Namespace(**{**vars(args), "messages": 200, "peek_messages": 100,
                                    "batch": 100})
    measure_receivers(spark, sqs, options, warm_up, args.receivers[0])
    rows: list[Row] = []
    for receivers in args.receivers:
        rows.extend(measure_receivers(spark, sqs, options, args, receivers))
    return rows


def measure_receivers(
    spark: Any, sqs: Any, options: dict[str, str], args: argparse.Namespace, receivers: int
) -> list[Row]:
    name = f"bench-spark-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    frame = spark.range(args.messages, numPartitions=args.partitions).selectExpr(
        "concat(lpad(cast(id as string), 12, '0'), repeat('x', 244)) as body"
    )
    ledger = DeliveryLedger()
    write_started = time.time()
    seconds, _ = timed(lambda: (
        frame.write.format("cqs").options(**options).option("queueName", name)
        .option("sendParallelism", str(args.send_parallelism)).mode("append").save()
    ))
    assert counts(sqs, url)[0] == args.messages, counts(sqs, url)
    for row_id in range(args.messages):  # the job succeeded: every send was acknowledged
        body = body_of(row_id)
        ledger.record_acknowledged(Acknowledged(body, body, name, write_started, time.time()))
    rows = [Row("writer: df.write (SendMessageBatch)", None, args.messages, seconds,
                f"{args.partitions} partitions x {args.send_parallelism} calls in flight")]

    peek = min(args.peek_messages, args.messages)
    seconds, peeked = timed(lambda: (
        spark.read.format("cqs").options(**options).option("queueName", name)
        .option("maxMessages", str(peek)).option("parallelReceivers", str(receivers))
        .load().select("body").collect()
    ))
    deadline = time.monotonic() + 30
    while counts(sqs, url) != (args.messages, 0) and time.monotonic() < deadline:
        time.sleep(0.5)
    bodies = [row["body"] for row in peeked]
    written = {body_of(row_id) for row_id in range(args.messages)}
    check = PeekCheck(args.messages, len(bodies), len(set(bodies)),
                      sum(1 for body in bodies if body not in written), counts(sqs, url)[0])
    rows.append(Row("peek: spark.read (receive + release)", receivers, len(bodies), seconds,
                    "rows collected to the driver", peek=check))

    sink = f"drained_{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="cqs-spark-bench-") as checkpoint:
        def drain() -> Any:
            query = (
                spark.readStream.format("cqs").options(**options).option("queueName", name)
                .option("maxMessagesPerBatch", str(args.batch))
                .option("visibilityTimeout", str(STREAM_VISIBILITY_SECONDS))
                .option("parallelReceivers", str(receivers)).load()
                .select("message_id", "body")
                .writeStream.format("memory").queryName(sink)
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start()
            )
            query.awaitTermination()
            return query

        stream_started = time.time()
        seconds, query = timed(drain)
        stream_ended = time.time()
    delivered = spark.sql(f"SELECT message_id, body FROM {sink}").collect()
    spark.sql(f"DROP VIEW IF EXISTS {sink}")
    for message in delivered:
        ledger.record_delivery(Delivery(
            message["body"], message["body"], name, stream_started, stream_ended,
            STREAM_VISIBILITY_SECONDS,
        ))
    verdict = ledger.verdict()
    message_ids = len({message["message_id"] for message in delivered})
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    consumed = sum(p["numInputRows"] for p in progress)
    receive_ms = sum(p["durationMs"].get("latestOffset", 0) for p in progress)
    left = counts(sqs, url)
    unclassified = (
        "; repeats not classified (the stream outlasted its visibility timeout)"
        if verdict.duplicates and seconds >= STREAM_VISIBILITY_SECONDS else ""
    )
    rows[0].verdict = verdict
    rows.append(Row(
        "stream: readStream availableNow (receive + delete)", receivers, consumed, seconds,
        f"{len(progress)} micro-batches of up to {args.batch}; "
        f"{receive_ms / 1000:.1f} s in latestOffset (driver receive + delete); "
        f"left in queue {left[0] + left[1]}; {message_ids} distinct message ids"
        f"{unclassified}",
        verdict,
    ))
    print(f"receivers {receivers}: sent {verdict.sent}, received {verdict.received}, lost "
          f"{len(verdict.lost)}, expected duplicates {verdict.expected_duplicates}, early "
          f"duplicates {verdict.early_duplicates}; stream rows {len(delivered)}, distinct "
          f"message ids {message_ids}, bodies nobody wrote {verdict.received_unacknowledged}, "
          f"left in queue {left[0] + left[1]}"
          + "".join(f"\n  lost: {body[:12]}" for body in verdict.lost[:10]), flush=True)
    sqs.delete_queue(QueueUrl=url)
    return rows




def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", help="measure this running server instead of starting one")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--peek-messages", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=2000, help="maxMessagesPerBatch")
    parser.add_argument("--receivers", type=int, nargs="+", default=[4, 1],
                        help="parallelReceivers values to measure")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--send-parallelism", type=int, default=4)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from pyspark_cqs import register

    def stop() -> None:
        pass

    store = "Cassandra"
    with tempfile.TemporaryDirectory(prefix="cqs-bench-") as work:
        endpoint = args.endpoint
        if endpoint is None:
            endpoint, stop, store = start_local_server(Path(work), [])
        spark = (SparkSession.builder.master(args.master).appName("cqs-spark-throughput")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        try:
            rows = measure(spark, endpoint, args)
        finally:
            spark.stop()
            stop()
    command = " ".join([
        "python benchmarks/spark_throughput.py", f"--messages {args.messages}",
        f"--batch {args.batch}", f"--receivers {' '.join(map(str, args.receivers))}",
        f"--partitions {args.partitions}", f"--send-parallelism {args.send_parallelism}",
    ])
    failed = [row for row in rows if (row.verdict is not None and not row.verdict.clean)
              or (row.peek is not None and not row.peek.clean)]
    text = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {machine_summary()}; one `cqs serve` process, "
        f"embedded Redis and {store}, and a `{args.master}` SparkSession (driver, executors "
        f"and Python workers) all on the same machine. Command: `{command}`.",
        "",
        "| scenario | parallelReceivers | messages | seconds | messages/s | "
        "sent (acknowledged) | received (distinct) | **lost** | expected duplicates | "
        "**early duplicates** | **after delete** | notes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[row.line() for row in rows],
        "",
        "Checked by body (each unique): sent = rows of a successful write job, received = "
        "distinct bodies the stream delivered; a writer row and the stream row after it "
        "share one queue's counts. The peek releases what it receives: its sent is the "
        "messages in the queue, received the distinct bodies it returned, lost the messages "
        "not visible again after its release, early duplicates the bodies it returned twice.",
        *([
            "",
            "**Not a result** (messages lost or delivered unexpectedly): " + "; ".join(
                f"{row.scenario}"
                f"{'' if row.receivers is None else f' (parallelReceivers {row.receivers})'}: "
                f"{problems(row.verdict)}"
                for row in failed if row.verdict is not None
            ) + ".",
        ] if failed else []),
    ])
    print(text)
    for row in failed:
        if row.verdict is not None:
            print(f"NOT A RESULT: {row.scenario}: {problems(row.verdict)}", file=sys.stderr)
    if args.write_docs:
        write_section(DOC, BEGIN, END, f"{BEGIN}\n{text}\n{END}", "Performance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
