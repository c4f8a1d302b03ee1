"""The compact JSON form of a message in the cache's payload hash."""

from __future__ import annotations

import json
import uuid

from cqs.domain.message_codec import decode_message, encode_message
from cqs.domain.model import Message, MessageAttributeValue


def _message(**changes: object) -> Message:
    values: dict[str, object] = {
        "message_id": str(uuid.uuid1()),
        "body": "hello",
        "md5_of_body": "5d41402abc4b2a76b9719d911017c592",
        "sent_timestamp_ms": 1_700_000_000_123,
        "visible_at_ms": 1_700_000_005_123,
        "sender_id": "AIDAEXAMPLE",
    }
    values.update(changes)
    return Message(**values)  # type: ignore[arg-type]


def test_a_plain_message_survives_the_round_trip() -> None:
    message = _message()
    assert decode_message(encode_message(message)) == message


def test_attributes_of_every_type_survive_the_round_trip() -> None:
    message = _message(
        message_attributes={
            "city": MessageAttributeValue("String", string_value="Zürich"),
            "count": MessageAttributeValue("Number.int", string_value="42"),
            "blob": MessageAttributeValue("Binary", binary_value=bytes(range(256))),
        },
        md5_of_message_attributes="0123456789abcdef0123456789abcdef",
        system_attributes={
            "AWSTraceHeader": MessageAttributeValue("String", string_value="Root=1-abc"),
        },
        md5_of_system_attributes="fedcba9876543210fedcba9876543210",
    )
    assert decode_message(encode_message(message)) == message


def test_an_empty_binary_value_stays_empty_not_absent() -> None:
    message = _message(message_attributes={"b": MessageAttributeValue("Binary", binary_value=b"")})
    assert decode_message(encode_message(message)).message_attributes["b"].binary_value == b""


def test_unicode_bodies_are_kept_as_is_and_decoded_from_bytes() -> None:
    message = _message(body="Grüße 🚀 \t\r\n")
    text = encode_message(message)
    assert "Grüße 🚀" in text
    assert decode_message(text.encode("utf-8")) == message


def test_the_encoding_is_compact_and_leaves_out_empty_fields() -> None:
    text = encode_message(_message())
    assert " " not in text
    assert set(json.loads(text)) == {"i", "b", "m", "s", "v", "u"}


def test_binary_values_are_stored_as_base64() -> None:
    message = _message(message_attributes={"b": MessageAttributeValue("Binary", binary_value=b"\x00\xff")})
    assert json.loads(encode_message(message))["a"]["b"] == {"t": "Binary", "b": "AP8="}


def test_fifo_fields_survive_the_round_trip_and_sequence_numbers_stay_exact() -> None:
    message = _message(
        group_id="orders:42", deduplication_id="d-1", sequence_number=1_799_999_999_999_001
    )
    document = json.loads(encode_message(message))
    assert (document["g"], document["d"], document["q"]) == (
        "orders:42", "d-1", 1_799_999_999_999_001
    )
    assert decode_message(encode_message(message)) == message


def test_a_standard_message_carries_no_fifo_fields() -> None:
    document = json.loads(encode_message(_message()))
    assert not {"g", "d", "q"} & set(document)
