"""Drain a queue continuously into Parquet partitioned by date, exactly once per message id.

    spark-submit pyspark_cqs/jobs/queue_to_parquet.py --endpoint http://cqs:9324 \\
        --queue-name orders --output /data/orders --checkpoint /checkpoints/orders

The `cqs` stream delivers at least once: a message whose micro-batch was written but not
yet deleted when the driver died arrives again after its visibility timeout, and a
micro-batch that was being written when the driver died is run again after the restart.
Each micro-batch therefore drops, before appending, every message id that the output
already holds in the dates the batch touches (and duplicates within the batch), so the
output holds each message once. Messages are deleted from the queue only after their
micro-batch is committed to the checkpoint.

Output and checkpoint must be on storage every node sees (HDFS, S3, a shared mount) when the
job runs on a cluster. `--available-now` drains what the queue holds and exits; without it
the job runs until stopped, one micro-batch every `--trigger-seconds`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_cqs.jobs.cli import add_queue_arguments, ensure_source, source_options

log = logging.getLogger("cqs.queue_to_parquet")

DATE_COLUMN = "date"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_queue_arguments(parser)
    parser.add_argument("--output", required=True, help="Parquet directory (partitioned by date)")
    parser.add_argument("--checkpoint", required=True, help="streaming checkpoint directory")
    parser.add_argument("--available-now", action="store_true",
                        help="drain what the queue holds now, then exit")
    parser.add_argument("--trigger-seconds", type=float, default=10.0,
                        help="seconds between micro-batches when running continuously")
    parser.add_argument("--max-messages-per-batch", type=int, default=10000)
    parser.add_argument("--visibility-timeout", type=int, default=300,
                        help="seconds a received message stays hidden; must exceed the time "
                        "a micro-batch takes plus --trigger-seconds")
    parser.add_argument("--time-zone", default="UTC",
                        help="time zone of the date partitions (of each message's SentTimestamp)")
    parser.add_argument("--query-name", default=None,
                        help="name of the streaming query (default: cqs_to_parquet_<queue>)")
    return parser.parse_args(argv)


def write_batch_once(output: str) -> object:
    """The foreachBatch function: append the messages the output does not hold yet."""

    def write(batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        rows = (
            batch.dropDuplicates(["message_id"])
            .withColumn(DATE_COLUMN, F.to_date(F.col("sent_timestamp")))
            .persist()
        )
        try:
            dates = [r[DATE_COLUMN] for r in rows.select(DATE_COLUMN).distinct().collect()]
            if not dates:
                return
            fresh = rows
            existing = _existing_ids(spark, output, dates)
            if existing is not None:
                fresh = rows.join(existing, "message_id", "left_anti")
            fresh.write.mode("append").partitionBy(DATE_COLUMN).parquet(output)
            log.info("batch %d: written to %s (dates %s)", batch_id, output,
                     ", ".join(sorted(str(d) for d in dates)))
        finally:
            rows.unpersist()

    return write


def _existing_ids(spark: SparkSession, output: str, dates: list[object]) -> DataFrame | None:
    try:
        table = spark.read.parquet(output)
    except Exception as exc:
        # The first batch: nothing written yet.
        if "PATH_NOT_FOUND" in str(exc) or "UNABLE_TO_INFER_SCHEMA" in str(exc):
            return None
        raise
    # Materialized before the append below adds files to the same directory.
    return (
        table.where(F.col(DATE_COLUMN).isin(dates)).select("message_id").distinct()
        .localCheckpoint()
    )


def run(spark: SparkSession, args: argparse.Namespace) -> None:
    print(ensure_source(spark), flush=True)
    spark.conf.set("spark.sql.session.timeZone", args.time_zone)
    options = source_options(args)
    options["maxMessagesPerBatch"] = str(args.max_messages_per_batch)
    options["visibilityTimeout"] = str(args.visibility_timeout)
    stream = spark.readStream.format("cqs").options(**options).load()
    queue = args.queue_name or args.queue_url.rstrip("/").rsplit("/", 1)[-1]
    writer = (
        stream.writeStream.foreachBatch(write_batch_once(args.output))  # type: ignore[arg-type]
        .option("checkpointLocation", args.checkpoint)
        .queryName(args.query_name or f"cqs_to_parquet_{queue}".replace("-", "_").replace(".", "_"))
    )
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{args.trigger_seconds} seconds")
    query = writer.start()
    print(f"draining {queue} into {args.output} (checkpoint {args.checkpoint})", flush=True)
    query.awaitTermination()


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    spark = SparkSession.builder.appName("cqs-queue-to-parquet").getOrCreate()
    run(spark, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
