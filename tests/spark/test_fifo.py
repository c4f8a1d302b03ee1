"""FIFO queues through `format("cqs")`: group ids and sequence numbers on read, group and
deduplication ids on write.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import drain, queue_counts, unique_name

pytestmark = pytest.mark.timeout(300)


def test_fifo_stream_read_shows_group_ids_and_sequence_numbers_in_send_order(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    name, url = make_queue(fifo=True)
    for i in range(20):
        group = f"g{i % 2}"
        sqs.send_message(QueueUrl=url, MessageBody=f"{group}-{i}", MessageGroupId=group,
                         MessageDeduplicationId=f"d{i}")
    table = unique_name("fifo_").replace("-", "_")

    query = (
        spark_session.readStream.format("cqs").options(**cqs_options)
        .option("queueName", name).load()
        .writeStream.format("memory").queryName(table)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(240)

    # A FIFO receive hides the rest of a group while part of it is in flight, so this takes
    # several micro-batches: each deletes the last one's messages, which frees the groups.
    rows = spark_session.table(table).collect()
    assert sorted(r.body for r in rows) == sorted(f"g{i % 2}-{i}" for i in range(20))
    for group in ("g0", "g1"):
        in_group = sorted((r for r in rows if r.message_group_id == group),
                          key=lambda r: int(r.sequence_number))
        assert [int(r.body.split("-")[1]) for r in in_group] == list(
            range(0 if group == "g0" else 1, 20, 2))
    assert queue_counts(sqs, url) == (0, 0)


def test_fifo_write_with_deterministic_ids_sends_each_row_once_even_when_written_twice(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue(fifo=True)
    frame = spark_session.createDataFrame(
        [(f"row-{i}", f"customer-{i % 3}") for i in range(30)],
        "body string, message_group_id string",
    ).coalesce(2)

    def write() -> None:
        (frame.write.format("cqs").options(**cqs_options).option("queueName", name)
         .option("deterministicDeduplicationIds", "true").option("writeId", "nightly-42")
         .mode("append").save())

    write()
    write()  # as a retried job would: same write id, same rows, same partitions

    received = drain(sqs, url)
    assert Counter(m["Body"] for m in received) == Counter(f"row-{i}" for i in range(30))
    assert {m["Body"]: m["Attributes"]["MessageGroupId"] for m in received} == {
        f"row-{i}": f"customer-{i % 3}" for i in range(30)
    }


def test_fifo_write_takes_group_and_deduplication_ids_from_columns(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue(fifo=True)
    frame = spark_session.createDataFrame(
        [("a", "g", "same"), ("b", "g", "same"), ("c", "h", "other")],
        "text string, tenant string, dedup string",
    ).coalesce(1)

    (frame.write.format("cqs").options(**cqs_options).option("queueName", name)
     .option("bodyColumn", "text").option("messageGroupIdColumn", "tenant")
     .option("deduplicationIdColumn", "dedup").mode("append").save())

    received = drain(sqs, url)
    # "b" repeats the deduplication id of "a" (sent just before it), so the queue drops it.
    assert sorted(m["Body"] for m in received) == ["a", "c"]
