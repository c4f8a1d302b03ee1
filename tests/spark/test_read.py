"""`spark.read.format("cqs")`: a peek that shows the messages and leaves the queue exactly as it
was (cqs's PeekMessages), or as any SQS endpoint allows (peekMode receive)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import drain, queue_counts, send_messages, wait_for

pytestmark = pytest.mark.timeout(300)


def test_peek_shows_every_message_and_leaves_the_queue_exactly_as_it_was(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue()
    sent = send_messages(
        sqs, url, 25,
        MessageAttributes={
            "error": {"DataType": "String", "StringValue": "timeout"},
            "attempt": {"DataType": "Number", "StringValue": "3"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )

    rows = spark_session.read.format("cqs").options(**cqs_options).load(name).collect()

    assert {r.message_id: r.body for r in rows} == sent
    first = rows[0]
    assert first.message_attributes["error"].asDict() == {
        "data_type": "String", "string_value": "timeout", "binary_value": None}
    assert first.message_attributes["attempt"].string_value == "3"
    assert first.message_attributes["attempt"].data_type == "Number"
    assert bytes(first.message_attributes["blob"].binary_value) == b"\x00\x01"
    assert isinstance(first.sent_timestamp, datetime)
    assert first.receive_count == 0  # looked at, never received
    assert first.attributes["ApproximateReceiveCount"] == "0"
    assert first.md5 and first.message_group_id is None and first.sequence_number is None

    # Nothing was hidden, nothing received: a consumer's first receive is the first.
    assert queue_counts(sqs, url) == (25, 0)
    received = drain(sqs, url)
    assert {m["MessageId"] for m in received} == set(sent)
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in received} == {"1"}


def test_batch_reads_leave_receive_counts_and_the_dead_letter_queue_untouched(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    _, dlq_url = make_queue()
    dlq_arn = sqs.get_queue_attributes(
        QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    name, url = make_queue(RedrivePolicy=json.dumps(
        {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1}))
    sent = send_messages(sqs, url, 150)
    # Ten received once and given back: the next receive moves them to the DLQ (as SQS).
    once = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
        for n, m in enumerate(once)])
    once_ids = {m["MessageId"] for m in once}

    for _ in range(3):  # three batch reads, each a full look at the queue
        rows = spark_session.read.format("cqs").options(**cqs_options).load(name).collect()
        assert {r.message_id for r in rows} == set(sent)
        assert {r.message_id: r.receive_count for r in rows} == {
            mid: 1 if mid in once_ids else 0 for mid in sent}
        assert queue_counts(sqs, url) == (150, 0)
        assert queue_counts(sqs, dlq_url) == (0, 0)

    received = drain(sqs, url)
    assert {m["MessageId"] for m in received} == set(sent) - once_ids
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in received} == {"1"}
    assert {m["MessageId"] for m in drain(sqs, dlq_url)} == once_ids


def test_receive_mode_peeks_any_sqs_endpoint_by_receiving_and_releasing(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue()
    sent = send_messages(sqs, url, 25)
    rows = (spark_session.read.format("cqs").options(**cqs_options)
            .option("peekMode", "receive").load(name).collect())
    assert {r.message_id: r.body for r in rows} == sent
    assert {r.receive_count for r in rows} == {1}
    # Released at once: all 25 are visible again and can be received and deleted.
    assert wait_for(lambda: queue_counts(sqs, url) == (25, 0), 10), queue_counts(sqs, url)
    received = drain(sqs, url)
    assert {m["MessageId"] for m in received} == set(sent)
    # The peek counted as a receive (this is what a RedrivePolicy sees).
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in received} == {"2"}


def test_a_read_of_a_consumed_range_shows_what_was_deleted_then(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue(**{"cqs.ConsumedRetentionSeconds": "3600"})
    sent = send_messages(sqs, url, 40, prefix="done")
    start = time.time() - 1
    drain(sqs, url)
    end = time.time() + 1
    frame = (spark_session.read.format("cqs").options(**cqs_options)
             .option("consumedStartTime", str(start)).option("consumedEndTime", str(end))
             .load(name))
    rows = frame.collect()
    assert sorted(r.body for r in rows) == sorted(sent.values())
    assert all(start * 1000 <= int(r.attributes["ConsumedTimestamp"]) < end * 1000 for r in rows)
    before = (spark_session.read.format("cqs").options(**cqs_options)
              .option("consumedStartTime", str(start - 3600))
              .option("consumedEndTime", str(start)).load(name))
    assert before.collect() == []
    assert queue_counts(sqs, url) == (0, 0)  # reading copies sends nothing


def test_one_dataframe_peeks_once_however_many_actions_run_on_it(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue()
    send_messages(sqs, url, 12)
    frame = spark_session.read.format("cqs").options(**cqs_options).option("queueName", name).load()

    assert frame.count() == 12
    assert frame.where("body like 'm-1%'").count() == 3  # m-1, m-10, m-11
    assert {r.receive_count for r in frame.collect()} == {0}


def test_peek_is_bounded_by_max_messages_and_spread_over_partitions(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue()
    send_messages(sqs, url, 40)
    frame = (
        spark_session.read.format("cqs").options(**cqs_options).option("queueName", name)
        .option("maxMessages", "30").option("numPartitions", "3").load()
    )

    assert frame.rdd.getNumPartitions() == 3
    assert frame.count() == 30
    assert queue_counts(sqs, url) == (40, 0)


def test_peek_of_an_empty_queue_is_an_empty_dataframe(
    spark_session: SparkSession, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, _ = make_queue()
    frame = spark_session.read.format("cqs").options(**cqs_options).load(name)
    assert frame.collect() == []


def test_a_missing_queue_fails_with_the_sqs_error(
    spark_session: SparkSession, cqs_options: dict[str, str]
) -> None:
    with pytest.raises(Exception, match=r"NonExistentQueue|QueueDoesNotExist"):
        spark_session.read.format("cqs").options(**cqs_options).load("no-such-queue").collect()
