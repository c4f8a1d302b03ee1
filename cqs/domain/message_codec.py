"""Message <-> compact JSON, the one serialized form of a message in both stores.

Owns `message_fields` / `message_from_fields` (everything but the id, for the Cassandra
payload cell, whose key holds the id) and `encode_message` / `decode_message` (with the id,
for the Redis payload hash). Pure functions, no I/O; imports only `cqs.domain.model` and the
standard library, so every adapter (and the Spark integration) can use it.

The JSON is compact (no spaces, short field names, empty fields left out); binary
attribute values are base64. Field names:

  i message_id   b body   m md5_of_body   s sent_timestamp_ms   v visible_at_ms
  u sender_id    a message_attributes      am md5_of_message_attributes
  y system_attributes     ym md5_of_system_attributes
  g group_id  d deduplication_id  q sequence_number   (FIFO queues only)

An attribute value is {"t": data_type, "s": string_value, "b": base64 of binary_value}
with absent values left out.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from cqs.domain.model import Message, MessageAttributeValue


def _encode_attributes(attributes: Mapping[str, MessageAttributeValue]) -> dict[str, Any]:
    encoded: dict[str, Any] = {}
    for name, value in attributes.items():
        item: dict[str, str] = {"t": value.data_type}
        if value.string_value is not None:
            item["s"] = value.string_value
        if value.binary_value is not None:
            item["b"] = base64.b64encode(value.binary_value).decode("ascii")
        encoded[name] = item
    return encoded


def _decode_attributes(encoded: Mapping[str, Any]) -> dict[str, MessageAttributeValue]:
    decoded: dict[str, MessageAttributeValue] = {}
    for name, item in encoded.items():
        binary = item.get("b")
        decoded[name] = MessageAttributeValue(
            data_type=item["t"],
            string_value=item.get("s"),
            binary_value=None if binary is None else base64.b64decode(binary, validate=True),
        )
    return decoded


def message_fields(message: Message) -> dict[str, Any]:
    """Every field of `message` except its id, as a JSON-ready document."""
    document: dict[str, Any] = {
        "b": message.body,
        "m": message.md5_of_body,
        "s": message.sent_timestamp_ms,
        "v": message.visible_at_ms,
        "u": message.sender_id,
    }
    if message.message_attributes:
        document["a"] = _encode_attributes(message.message_attributes)
    if message.md5_of_message_attributes is not None:
        document["am"] = message.md5_of_message_attributes
    if message.system_attributes:
        document["y"] = _encode_attributes(message.system_attributes)
    if message.md5_of_system_attributes is not None:
        document["ym"] = message.md5_of_system_attributes
    if message.group_id is not None:
        document["g"] = message.group_id
    if message.deduplication_id is not None:
        document["d"] = message.deduplication_id
    if message.sequence_number is not None:
        document["q"] = message.sequence_number
    return document


def message_from_fields(message_id: str, document: Mapping[str, Any]) -> Message:
    return Message(
        message_id=message_id,
        body=document["b"],
        md5_of_body=document["m"],
        sent_timestamp_ms=int(document["s"]),
        visible_at_ms=int(document["v"]),
        sender_id=document["u"],
        message_attributes=_decode_attributes(document.get("a", {})),
        md5_of_message_attributes=document.get("am"),
        system_attributes=_decode_attributes(document.get("y", {})),
        md5_of_system_attributes=document.get("ym"),
        group_id=document.get("g"),
        deduplication_id=document.get("d"),
        sequence_number=None if document.get("q") is None else int(document["q"]),
    )


def dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def encode_message(message: Message) -> str:
    return dumps({"i": message.message_id, **message_fields(message)})


def decode_message(text: str | bytes) -> Message:
    document = json.loads(text)
    return message_from_fields(document["i"], document)
