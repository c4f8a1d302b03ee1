"""`df.write` and `df.writeStream` with `format("cqs")`: every row arrives once, as a message
with its attributes."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import drain, send_messages

pytestmark = pytest.mark.timeout(300)


def test_batch_write_sends_every_row_once_with_its_message_attributes(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, url = make_queue()
    rows = [(f"order-{i}", {"index": str(i), "parity": "even" if i % 2 == 0 else "odd"})
            for i in range(137)]
    frame = spark_session.createDataFrame(
        rows, "body string, message_attributes map<string,string>"
    ).repartition(3)

    (frame.write.format("cqs").options(**cqs_options).option("queueName", name)
     .mode("append").save())

    received = drain(sqs, url)
    assert Counter(m["Body"] for m in received) == Counter(body for body, _ in rows)
    for message in received:
        index = int(message["Body"].split("-")[1])
        assert message["MessageAttributes"] == {
            "index": {"DataType": "String", "StringValue": str(index)},
            "parity": {"DataType": "String", "StringValue": "even" if index % 2 == 0 else "odd"},
        }


def test_batch_write_takes_the_body_and_typed_attributes_from_named_columns(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    _, url = make_queue()
    frame = spark_session.createDataFrame(
        [(json.dumps({"id": i}), {"amount": i * 10}, None if i == 2 else "x") for i in range(4)],
        "payload string, numbers map<string,int>, unused string",
    )

    (frame.write.format("cqs").options(**cqs_options).option("queueUrl", url)
     .option("bodyColumn", "payload").option("messageAttributesColumn", "numbers")
     .mode("append").save())

    received = sorted(drain(sqs, url), key=lambda m: json.loads(m["Body"])["id"])
    assert [json.loads(m["Body"]) for m in received] == [{"id": i} for i in range(4)]
    assert [m["MessageAttributes"]["amount"] for m in received] == [
        {"DataType": "Number", "StringValue": str(i * 10)} for i in range(4)
    ]


def test_a_peeked_dataframe_written_to_another_queue_keeps_bodies_and_attributes(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    source_name, source_url = make_queue()
    target_name, target_url = make_queue()
    attributes = {
        "error": {"DataType": "String", "StringValue": "timeout"},
        "attempt": {"DataType": "Number.int", "StringValue": "3"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
    }
    sent = send_messages(sqs, source_url, 15, MessageAttributes=attributes)

    peeked = spark_session.read.format("cqs").options(**cqs_options).load(source_name)
    (peeked.write.format("cqs").options(**cqs_options).option("queueName", target_name)
     .mode("append").save())

    moved = drain(sqs, target_url)
    assert Counter(m["Body"] for m in moved) == Counter(sent.values())
    assert all(m["MessageAttributes"] == attributes for m in moved)
    assert len(drain(sqs, source_url)) == 15  # the peek left the source as it was


def test_stream_write_sends_every_row_once(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    name, url = make_queue()
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    bodies = []
    for file_number in range(3):
        lines = [{"body": f"event-{file_number}-{i}", "kind": f"k{i % 3}"} for i in range(40)]
        bodies += [line["body"] for line in lines]
        (incoming / f"part-{file_number}.json").write_text(
            "\n".join(json.dumps(line) for line in lines)
        )

    query = (
        spark_session.readStream.schema("body string, kind string")
        .option("maxFilesPerTrigger", 1).json(str(incoming))
        .selectExpr("body", "map('kind', kind) as message_attributes")
        .writeStream.format("cqs").options(**cqs_options).option("queueName", name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(240)

    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [40] * 3
    received = drain(sqs, url)
    assert Counter(m["Body"] for m in received) == Counter(bodies)
    assert {m["MessageAttributes"]["kind"]["StringValue"] for m in received} == {"k0", "k1", "k2"}


def test_a_row_without_a_body_column_is_refused_before_anything_is_sent(
    spark_session: SparkSession, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, _ = make_queue()
    frame = spark_session.createDataFrame([("x",)], "text string")
    with pytest.raises(Exception, match="body column 'body' is not in the DataFrame"):
        (frame.write.format("cqs").options(**cqs_options).option("queueName", name)
         .mode("append").save())


def test_overwrite_is_refused(
    spark_session: SparkSession, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]],
) -> None:
    name, _ = make_queue()
    frame = spark_session.createDataFrame([("x",)], "body string")
    with pytest.raises(Exception, match="can only be appended to"):
        (frame.write.format("cqs").options(**cqs_options).option("queueName", name)
         .mode("overwrite").save())
