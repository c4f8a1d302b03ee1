"""Pure mapping between SQS messages and Spark rows, both ways.

Owns the schema a `cqs` read produces, the tuple built from each ReceiveMessage entry,
which DataFrame columns a write takes the body, message attributes, FIFO group and
deduplication ids from, the SendMessageBatch entry built from each row, and the
deterministic deduplication ids. No I/O; imports pyspark types and the standard library.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pyspark_cqs.options import WriteOptions

ATTRIBUTE_VALUE = StructType(
    [
        StructField("data_type", StringType(), False),
        StructField("string_value", StringType(), True),
        StructField("binary_value", BinaryType(), True),
    ]
)

MESSAGE_SCHEMA = StructType(
    [
        StructField("message_id", StringType(), False),
        StructField("body", StringType(), True),
        # System attributes as SQS names them: SentTimestamp, ApproximateReceiveCount, ...
        StructField("attributes", MapType(StringType(), StringType()), True),
        StructField("message_attributes", MapType(StringType(), ATTRIBUTE_VALUE), True),
        StructField("sent_timestamp", TimestampType(), True),
        StructField("receive_count", IntegerType(), True),
        StructField("md5", StringType(), True),
        # FIFO queues only; null for standard queues.
        StructField("message_group_id", StringType(), True),
        StructField("sequence_number", StringType(), True),
    ]
)

Row = tuple[Any, ...]


def _millis(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


def message_row(message: Mapping[str, Any]) -> Row:
    """One ReceiveMessage entry (boto3's dict) as a tuple in MESSAGE_SCHEMA order."""
    attributes = {str(k): str(v) for k, v in message.get("Attributes", {}).items()}
    message_attributes = {
        str(name): (
            str(value.get("DataType", "String")),
            value.get("StringValue"),
            None if value.get("BinaryValue") is None else bytes(value["BinaryValue"]),
        )
        for name, value in message.get("MessageAttributes", {}).items()
    }
    receive_count = attributes.get("ApproximateReceiveCount")
    return (
        str(message["MessageId"]),
        message.get("Body"),
        attributes,
        message_attributes,
        _millis(attributes.get("SentTimestamp")),
        None if receive_count is None else int(receive_count),
        message.get("MD5OfBody"),
        attributes.get("MessageGroupId"),
        attributes.get("SequenceNumber"),
    )


# --- writing ------------------------------------------------------------------------------

_NUMBER_TYPES = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType)

# Column names used when the matching option is not set and the DataFrame has the column;
# a DataFrame read from a `cqs` queue therefore writes back with its attributes and ids.
DEFAULT_ATTRIBUTES_COLUMN = "message_attributes"
DEFAULT_GROUP_ID_COLUMN = "message_group_id"
DEFAULT_DEDUPLICATION_ID_COLUMN = "message_deduplication_id"
DEFAULT_DELAY_COLUMN = "delay_seconds"


class SchemaError(ValueError):
    """The DataFrame given to a `cqs` write lacks a column or has one of the wrong type."""


def _attribute_kind(value_type: DataType) -> str:
    if isinstance(value_type, StringType):
        return "string"
    if isinstance(value_type, BooleanType):
        return "boolean"
    if isinstance(value_type, _NUMBER_TYPES):
        return "number"
    if isinstance(value_type, BinaryType):
        return "binary"
    if isinstance(value_type, StructType) and "data_type" in value_type.fieldNames():
        return "struct"
    raise SchemaError(
        "message attribute values must be strings, numbers, booleans, binary, or a struct "
        f"<data_type, string_value, binary_value>; got {value_type.simpleString()}"
    )


def _column(schema: StructType, name: str | None, default: str, role: str) -> int | None:
    names = schema.fieldNames()
    if name is None:
        return names.index(default) if default in names else None
    if name not in names:
        raise SchemaError(f"{role} column {name!r} is not in the DataFrame (columns: {names})")
    return names.index(name)


@dataclass(frozen=True)
class RowLayout:
    """Where each part of a message sits in the rows of one DataFrame, decided on the driver."""

    body: int
    message_attributes: int | None
    attribute_kind: str
    group_id: int | None
    deduplication_id: int | None
    delay_seconds: int | None
    constant_group_id: str | None

    @classmethod
    def of(cls, schema: StructType, options: WriteOptions) -> RowLayout:
        names = schema.fieldNames()
        if options.body_column not in names:
            raise SchemaError(
                f"body column {options.body_column!r} is not in the DataFrame (columns: "
                f"{names}); name it with option bodyColumn"
            )
        body = names.index(options.body_column)
        if not isinstance(schema.fields[body].dataType, StringType):
            raise SchemaError(
                f"body column {options.body_column!r} must be a string, got "
                f"{schema.fields[body].dataType.simpleString()}; cast it or use to_json()"
            )
        attributes = _column(
            schema, options.message_attributes_column, DEFAULT_ATTRIBUTES_COLUMN,
            "message attributes",
        )
        kind = "none"
        if attributes is not None:
            map_type = schema.fields[attributes].dataType
            if not isinstance(map_type, MapType) or not isinstance(map_type.keyType, StringType):
                raise SchemaError(
                    f"message attributes column {names[attributes]!r} must be a map with "
                    f"string keys, got {map_type.simpleString()}"
                )
            kind = _attribute_kind(map_type.valueType)
        return cls(
            body=body,
            message_attributes=attributes,
            attribute_kind=kind,
            group_id=_column(
                schema, options.message_group_id_column, DEFAULT_GROUP_ID_COLUMN, "group id"
            ),
            deduplication_id=_column(
                schema, options.deduplication_id_column, DEFAULT_DEDUPLICATION_ID_COLUMN,
                "deduplication id",
            ),
            delay_seconds=_column(
                schema, options.delay_seconds_column, DEFAULT_DELAY_COLUMN, "delay seconds"
            ),
            constant_group_id=options.message_group_id,
        )

    def entry(self, row: Any, deduplication_id: str | None = None) -> dict[str, Any] | None:
        """The SendMessageBatch entry (without Id) for one row; None for a null body."""
        body = row[self.body]
        if body is None:
            return None
        entry: dict[str, Any] = {"MessageBody": body}
        if self.message_attributes is not None and row[self.message_attributes]:
            values = {
                str(name): self._attribute_value(value)
                for name, value in row[self.message_attributes].items()
                if value is not None
            }
            entry["MessageAttributes"] = {k: v for k, v in values.items() if v is not None}
            if not entry["MessageAttributes"]:
                del entry["MessageAttributes"]
        group = row[self.group_id] if self.group_id is not None else None
        if group is None:
            group = self.constant_group_id
        if group is not None:
            entry["MessageGroupId"] = str(group)
        given = row[self.deduplication_id] if self.deduplication_id is not None else None
        if given is not None:
            entry["MessageDeduplicationId"] = str(given)
        elif deduplication_id is not None:
            entry["MessageDeduplicationId"] = deduplication_id
        if self.delay_seconds is not None and row[self.delay_seconds] is not None:
            entry["DelaySeconds"] = int(row[self.delay_seconds])
        return entry

    def _attribute_value(self, value: Any) -> dict[str, Any] | None:
        kind = self.attribute_kind
        if kind == "string":
            return {"DataType": "String", "StringValue": str(value)}
        if kind == "boolean":
            return {"DataType": "String", "StringValue": "true" if value else "false"}
        if kind == "number":
            text = format(value, "f") if isinstance(value, Decimal) else str(value)
            return {"DataType": "Number", "StringValue": text}
        if kind == "binary":
            return {"DataType": "Binary", "BinaryValue": bytes(value)}
        # A struct <data_type, string_value, binary_value>, as a `cqs` read produces it.
        data_type, string_value, binary_value = (
            value["data_type"], value["string_value"], value["binary_value"]
        )
        if binary_value is not None:
            return {"DataType": data_type or "Binary", "BinaryValue": bytes(binary_value)}
        if string_value is not None:
            return {"DataType": data_type or "String", "StringValue": str(string_value)}
        return None


def entry_size(entry: Mapping[str, Any]) -> int:
    """Bytes SQS counts against the batch limit: body plus attribute names, types, values."""
    size = len(entry["MessageBody"].encode("utf-8"))
    for name, value in entry.get("MessageAttributes", {}).items():
        size += len(name.encode("utf-8")) + len(value["DataType"].encode("utf-8"))
        if "BinaryValue" in value:
            size += len(value["BinaryValue"])
        else:
            size += len(value["StringValue"].encode("utf-8"))
    return size


def deduplication_id(write_id: str, batch_id: int, partition_id: int, row_number: int) -> str:
    """The same id for the same row of the same (micro-)batch and partition, on every retry.

    A retried task or a re-run micro-batch sends the same ids, so a FIFO queue drops the
    repeats within its deduplication interval.
    """
    key = f"{write_id}/{batch_id}/{partition_id}/{row_number}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
