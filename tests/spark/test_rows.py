"""Pure parts of the `cqs` data source: options, the message <-> row mapping, dedup ids.

No Spark session and no server: these run in milliseconds.
"""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DecimalType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from pyspark_cqs.options import Connection, OptionError, ReadOptions, WriteOptions
from pyspark_cqs.queue import SqsQueue
from pyspark_cqs.receiving import split_rows
from pyspark_cqs.rows import (
    MESSAGE_SCHEMA,
    RowLayout,
    SchemaError,
    deduplication_id,
    entry_size,
    message_row,
)

QUEUE = {"queueName": "orders"}


def test_a_received_message_becomes_a_row_in_schema_order() -> None:
    row = message_row({
        "MessageId": "id-1", "ReceiptHandle": "h", "Body": "hello", "MD5OfBody": "md5",
        "Attributes": {"SentTimestamp": "1700000000123", "ApproximateReceiveCount": "2",
                       "MessageGroupId": "g", "SequenceNumber": "18"},
        "MessageAttributes": {"n": {"DataType": "Number", "StringValue": "1"},
                              "b": {"DataType": "Binary", "BinaryValue": b"\x01"}},
    })
    assert len(row) == len(MESSAGE_SCHEMA.fields)
    assert row[0:2] == ("id-1", "hello")
    assert row[3] == {"n": ("Number", "1", None), "b": ("Binary", None, b"\x01")}
    assert row[4] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert row[5:] == (2, "md5", "g", "18")


def test_the_queue_comes_from_queue_name_queue_url_or_the_load_path() -> None:
    assert Connection.parse({"queuename": "a"}).queue_name == "a"
    assert Connection.parse({"path": "b"}).queue_name == "b"
    assert Connection.parse({"path": "http://h:1/0/c"}).queue_url == "http://h:1/0/c"
    with pytest.raises(OptionError, match="queueName or queueUrl"):
        Connection.parse({})
    with pytest.raises(OptionError, match="go together"):
        Connection.parse({**QUEUE, "accessKeyId": "x"})


def test_read_options_are_checked_against_the_sqs_limits() -> None:
    options = ReadOptions.parse({**QUEUE, "waittimeseconds": "20", "visibilitytimeout": "5"})
    assert (options.wait_time_seconds, options.visibility_timeout) == (20, 5)
    with pytest.raises(OptionError, match="waitTimeSeconds must be between 0 and 20"):
        ReadOptions.parse({**QUEUE, "waitTimeSeconds": "21"})
    with pytest.raises(OptionError, match="must be an integer"):
        ReadOptions.parse({**QUEUE, "maxMessagesPerBatch": "many"})


def test_rows_are_spread_over_partitions_in_order() -> None:
    options = ReadOptions.parse({**QUEUE, "rowsPerPartition": "4"})
    rows = [(i,) for i in range(10)]
    parts = split_rows(rows, options.partition_count(len(rows)))
    assert [p.rows for p in parts] == [rows[0:4], rows[4:8], rows[8:10]]
    assert split_rows([], 3) == []


STRING = StringType()
ATTRIBUTE_STRUCT = StructType([
    StructField("data_type", STRING),
    StructField("string_value", STRING),
    StructField("binary_value", BinaryType()),
])


def layout(*columns: tuple[str, DataType], **options: str) -> RowLayout:
    # Built by hand: parsing DDL would need a running JVM.
    schema = StructType([StructField(name, data_type) for name, data_type in columns])
    return RowLayout.of(schema, WriteOptions.parse({**QUEUE, **options}))


def attributes(value_type: DataType, name: str = "message_attributes") -> tuple[str, DataType]:
    return name, MapType(STRING, value_type)


def test_a_row_becomes_an_entry_with_string_number_and_struct_attributes() -> None:
    strings = layout(("body", STRING), attributes(STRING))
    assert strings.entry(Row("b", {"k": "v", "gone": None})) == {
        "MessageBody": "b", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}}
    numbers = layout(("text", STRING), attributes(DecimalType(10, 2), "n"), bodyColumn="text",
                     messageAttributesColumn="n")
    assert numbers.entry(Row("b", {"x": Decimal("1.50")}))["MessageAttributes"] == {
        "x": {"DataType": "Number", "StringValue": "1.50"}}
    structs = layout(("body", STRING), attributes(ATTRIBUTE_STRUCT))
    value = Row(data_type="Binary", string_value=None, binary_value=bytearray(b"\x02"))
    assert structs.entry(Row("b", {"x": value})) == {
        "MessageBody": "b", "MessageAttributes": {"x": {"DataType": "Binary",
                                                        "BinaryValue": b"\x02"}}}
    assert strings.entry(Row(None, {})) is None


def test_fifo_ids_come_from_columns_before_the_generated_ones() -> None:
    fifo = layout(("body", STRING), ("message_group_id", STRING),
                  ("message_deduplication_id", STRING))
    assert fifo.entry(Row("b", "g", "given"), "generated") == {
        "MessageBody": "b", "MessageGroupId": "g", "MessageDeduplicationId": "given"}
    assert fifo.entry(Row("b", "g", None), "generated")["MessageDeduplicationId"] == "generated"
    constant = layout(("body", STRING), messageGroupId="all")
    assert constant.entry(Row("b"))["MessageGroupId"] == "all"


def test_a_dataframe_the_writer_cannot_send_is_refused_with_the_reason() -> None:
    with pytest.raises(SchemaError, match="body column 'body' is not in the DataFrame"):
        layout(("text", STRING))
    with pytest.raises(SchemaError, match="must be a string"):
        layout(("body", IntegerType()))
    with pytest.raises(SchemaError, match="message attribute values"):
        layout(("body", STRING), attributes(ArrayType(IntegerType())))


def test_deduplication_ids_repeat_for_the_same_row_and_differ_otherwise() -> None:
    first = deduplication_id("w", 3, 1, 7)
    assert first == deduplication_id("w", 3, 1, 7)
    assert len(first) <= 128
    assert len({first, deduplication_id("w", 3, 1, 8), deduplication_id("w", 4, 1, 7),
                deduplication_id("w", 3, 2, 7), deduplication_id("v", 3, 1, 7)}) == 5


def test_entry_size_counts_body_and_attributes_in_bytes() -> None:
    entry = {"MessageBody": "é", "MessageAttributes": {
        "k": {"DataType": "String", "StringValue": "vv"},
        "b": {"DataType": "Binary", "BinaryValue": b"123"}}}
    assert entry_size(entry) == 2 + (1 + 6 + 2) + (1 + 6 + 3)


def test_a_queue_pickles_without_its_client() -> None:
    queue = SqsQueue(Connection.parse({"queueUrl": "http://h:1/0/q", "endpoint": "http://h:1"}))
    assert queue.client is not None
    copy = pickle.loads(pickle.dumps(queue))
    assert copy._client is None and copy.url == "http://h:1/0/q"
