"""Report on a dead-letter queue: how many messages per error, since when, and samples.

    spark-submit pyspark_cqs/jobs/dlq_report.py --endpoint http://cqs:9324 \\
        --queue-name orders-dlq --error-attribute error --output /reports/orders-dlq

Peeks at up to `--max-messages` messages (they stay in the queue as they were: cqs's
PeekMessages receives nothing and counts no receive), groups them by the message attribute named by
`--error-attribute` ("(none)" when a message lacks it), and prints one line per error value:
count, first and last SentTimestamp, highest receive count and up to `--samples` bodies
(cut to `--sample-chars`). `--output` also writes the report as JSON lines.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_cqs.jobs.cli import add_queue_arguments, ensure_source, source_options

NO_ERROR = "(none)"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_queue_arguments(parser)
    parser.add_argument("--error-attribute", default="error",
                        help="message attribute holding the error (default: error)")
    parser.add_argument("--max-messages", type=int, default=100000,
                        help="peek at most this many messages")
    parser.add_argument("--samples", type=int, default=3, help="sample bodies per error")
    parser.add_argument("--sample-chars", type=int, default=200)
    parser.add_argument("--output", default=None, help="also write the report here (JSON lines)")
    return parser.parse_args(argv)


def report(messages: DataFrame, error_attribute: str, samples: int, sample_chars: int) -> DataFrame:
    """One row per error value: count, first/last sent, max receive count, sample bodies."""
    error = F.coalesce(
        F.col("message_attributes").getItem(error_attribute).getField("string_value"),
        F.lit(NO_ERROR),
    )
    return (
        messages.withColumn("error", error)
        .groupBy("error")
        .agg(
            F.count("*").alias("messages"),
            F.min("sent_timestamp").alias("first_sent"),
            F.max("sent_timestamp").alias("last_sent"),
            F.max("receive_count").alias("max_receive_count"),
            F.slice(
                F.array_sort(F.collect_list(F.struct("sent_timestamp", "body"))), 1, samples
            ).alias("oldest"),
        )
        .withColumn(
            "samples",
            F.transform("oldest", lambda s: F.substring(s.getField("body"), 1, sample_chars)),
        )
        .drop("oldest")
        .orderBy(F.desc("messages"), "error")
    )


def run(spark: SparkSession, args: argparse.Namespace) -> list[dict[str, object]]:
    print(ensure_source(spark), flush=True)
    options = source_options(args)
    options["maxMessages"] = str(args.max_messages)
    messages = spark.read.format("cqs").options(**options).load()
    table = report(messages, args.error_attribute, args.samples, args.sample_chars).persist()
    rows = [row.asDict(recursive=True) for row in table.collect()]
    total = sum(int(r["messages"]) for r in rows)
    queue = args.queue_name or args.queue_url
    print(f"{queue}: {total} messages peeked, by {args.error_attribute!r}:")
    for r in rows:
        print(f"  {r['messages']:>8}  {r['error']}  (first {r['first_sent']}, last "
              f"{r['last_sent']}, max receives {r['max_receive_count']})")
        for body in r["samples"]:
            print(f"            sample: {body}")
    if args.output:
        table.coalesce(1).write.mode("overwrite").json(args.output)
        print(f"report written to {args.output}")
    table.unpersist()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    spark = SparkSession.builder.appName("cqs-dlq-report").getOrCreate()
    run(spark, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
