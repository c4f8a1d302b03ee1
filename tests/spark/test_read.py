"""`spark.read.format("cqs")`: a peek that shows the messages and leaves them in the queue."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import drain, queue_counts, send_messages, wait_for

pytestmark = pytest.mark.timeout(300)


def test_peek_shows_every_message_and_leaves_the_queue_intact(
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
    assert first.receive_count == 1
    assert first.attributes["ApproximateReceiveCount"] == "1"
    assert first.md5 and first.message_group_id is None and first.sequence_number is None

    # Released at once: all 25 are visible again and can be received and deleted.
    assert wait_for(lambda: queue_counts(sqs, url) == (25, 0), 10), queue_counts(sqs, url)
    received = drain(sqs, url)
    assert {m["MessageId"] for m in received} == set(sent)
    # The peek counted as a receive (this is what a RedrivePolicy sees).
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in received} == {"2"}


def test_one_dataframe_peeks_once_however_many_actions_run_on_it(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue()
    send_messages(sqs, url, 12)
    frame = spark_session.read.format("cqs").options(**cqs_options).option("queueName", name).load()

    assert frame.count() == 12
    assert frame.where("body like 'm-1%'").count() == 3  # m-1, m-10, m-11
    assert {r.receive_count for r in frame.collect()} == {1}


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
    assert wait_for(lambda: queue_counts(sqs, url) == (40, 0), 10), queue_counts(sqs, url)


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
