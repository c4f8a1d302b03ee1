"""Message attributes, system attributes and their MD5 digests, over both protocols.

boto3 does not check MD5OfMessageAttributes itself, so every digest here is recomputed
client-side with the documented algorithm. Must not import cqs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from .conftest import Speaker, SqsError, md5_hex, md5_of_message_attributes, receive_within

EVERY_KIND: dict[str, dict[str, Any]] = {
    "colour": {"DataType": "String", "StringValue": "blue — ünïcødé"},
    "count": {"DataType": "Number", "StringValue": "-12.50"},
    "blob": {"DataType": "Binary", "BinaryValue": bytes([0, 1, 2, 254, 255])},
    "ratio": {"DataType": "Number.float", "StringValue": "0.25"},
    "picture": {"DataType": "Binary.gif", "BinaryValue": b"GIF89a\x01\x00"},
    "label": {"DataType": "String.label1", "StringValue": "custom"},
}


def test_message_attributes_of_every_kind_round_trip_exactly(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    speaker.send(url, "with attributes", message_attributes=EVERY_KIND)
    [message] = speaker.receive(url, wait_seconds=2, message_attribute_names=["All"])
    assert message.message_attributes == EVERY_KIND


def test_md5_of_message_attributes_matches_on_send_and_receive(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    expected = md5_of_message_attributes(EVERY_KIND)
    sent = speaker.send(url, "digest me", message_attributes=EVERY_KIND)
    assert sent.md5_of_message_attributes == expected
    assert sent.md5_of_body == md5_hex("digest me")

    [message] = speaker.receive(url, wait_seconds=2, message_attribute_names=["All"])
    assert message.md5_of_message_attributes == expected
    assert message.md5_of_body == md5_hex("digest me")


def test_md5_of_single_string_attribute_is_the_documented_digest(
    speaker: Speaker, make_queue: Any
) -> None:
    # A fixed digest, so that the client-side helper is not the only witness:
    # md5(len "a", "a", len "String", "String", 0x01, len "b", "b"); lengths 4-byte big endian.
    attributes = {"a": {"DataType": "String", "StringValue": "b"}}
    sent = speaker.send(make_queue(), "x", message_attributes=attributes)
    assert sent.md5_of_message_attributes == "bef8bf215374a0a228d67533b1a488be"
    assert md5_of_message_attributes(attributes) == "bef8bf215374a0a228d67533b1a488be"


def test_message_without_attributes_has_no_attribute_digest(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    sent = speaker.send(url, "plain")
    assert not sent.md5_of_message_attributes
    [message] = speaker.receive(url, wait_seconds=2, message_attribute_names=["All"])
    assert message.message_attributes == {}
    assert not message.md5_of_message_attributes


def _send_named(speaker: Speaker, url: str) -> None:
    speaker.send(
        url,
        "named",
        message_attributes={
            "foo.a": {"DataType": "String", "StringValue": "1"},
            "foo.b": {"DataType": "String", "StringValue": "2"},
            "food": {"DataType": "String", "StringValue": "3"},
            "bar": {"DataType": "Number", "StringValue": "4"},
        },
    )


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (["All"], {"foo.a", "foo.b", "food", "bar"}),
        ([".*"], {"foo.a", "foo.b", "food", "bar"}),
        (["bar"], {"bar"}),
        (["foo.a", "bar"], {"foo.a", "bar"}),
        (["foo.*"], {"foo.a", "foo.b", "food"}),  # a prefix, no dot needed, as in SQS
        (["missing"], set()),
        ([], set()),
    ],
    ids=["All", "dot-star", "exact", "two-exact", "prefix", "missing", "none"],
)
def test_message_attribute_names_select_what_is_returned(
    speaker: Speaker, make_queue: Any, requested: list[str], expected: set[str]
) -> None:
    url = make_queue()
    _send_named(speaker, url)
    [message] = speaker.receive(url, wait_seconds=2, message_attribute_names=requested)
    assert set(message.message_attributes) == expected


def test_more_than_ten_message_attributes_is_refused(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    attributes = {f"a{n}": {"DataType": "String", "StringValue": str(n)} for n in range(11)}
    with pytest.raises(SqsError) as caught:
        speaker.send(url, "too many", message_attributes=attributes)
    assert caught.value.code == "InvalidParameterValue"
    assert caught.value.status == 400


def test_ten_message_attributes_are_accepted(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    attributes = {f"a{n}": {"DataType": "String", "StringValue": str(n)} for n in range(10)}
    speaker.send(url, "just enough", message_attributes=attributes)
    [message] = speaker.receive(url, wait_seconds=2, message_attribute_names=["All"])
    assert message.message_attributes == attributes


@pytest.mark.parametrize("name", ["AWS.reserved", "Amazon.reserved", "aws.lower"])
def test_attribute_name_with_reserved_prefix_is_refused(
    speaker: Speaker, make_queue: Any, name: str
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.send(
            make_queue(),
            "reserved",
            message_attributes={name: {"DataType": "String", "StringValue": "v"}},
        )
    assert caught.value.code == "InvalidParameterValue"


@pytest.mark.parametrize("name", [".leading", "trailing.", "two..dots", "bad name", "bad!"])
def test_malformed_attribute_name_is_refused(speaker: Speaker, make_queue: Any, name: str) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.send(
            make_queue(),
            "malformed",
            message_attributes={name: {"DataType": "String", "StringValue": "v"}},
        )
    assert caught.value.code == "InvalidParameterValue"


@pytest.mark.parametrize(
    "value",
    [
        {"DataType": "Colour", "StringValue": "blue"},
        {"DataType": "Number", "StringValue": "twelve"},
        {"DataType": "String", "StringValue": ""},
    ],
    ids=["unknown-type", "non-numeric-number", "empty-string"],
)
def test_invalid_attribute_value_is_refused(
    speaker: Speaker, make_queue: Any, value: dict[str, Any]
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.send(make_queue(), "bad value", message_attributes={"attr": value})
    assert caught.value.code == "InvalidParameterValue"


# --- system attributes --------------------------------------------------------------------


def names(parameter: str, values: list[str]) -> dict[str, Any]:
    """Receive options asking for system attributes through the named (old or new) parameter."""
    return {parameter: values}


@pytest.mark.parametrize("parameter", ["attribute_names", "system_attribute_names"])
def test_all_system_attributes_describe_the_delivery(
    speaker: Speaker, make_queue: Any, parameter: str
) -> None:
    url = make_queue()
    before_ms = int(time.time() * 1000)
    speaker.send(url, "describe me")
    [message] = speaker.receive(url, wait_seconds=2, **names(parameter, ["All"]))
    after_ms = int(time.time() * 1000)

    attributes = message.attributes
    assert attributes["ApproximateReceiveCount"] == "1"
    assert attributes["SenderId"]
    sent = int(attributes["SentTimestamp"])
    first_receive = int(attributes["ApproximateFirstReceiveTimestamp"])
    assert before_ms - 2000 <= sent <= after_ms + 2000  # milliseconds, not seconds
    assert sent <= first_receive <= after_ms + 2000


@pytest.mark.parametrize("parameter", ["attribute_names", "system_attribute_names"])
def test_only_requested_system_attributes_are_returned(
    speaker: Speaker, make_queue: Any, parameter: str
) -> None:
    url = make_queue()
    speaker.send(url, "pick one")
    [message] = speaker.receive(
        url, wait_seconds=2, **names(parameter, ["SentTimestamp", "SenderId"])
    )
    assert set(message.attributes) == {"SentTimestamp", "SenderId"}


def test_no_system_attributes_unless_asked(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.send(url, "quiet")
    [message] = speaker.receive(url, wait_seconds=2)
    assert message.attributes == {}


def test_receive_count_increments_and_first_receive_time_stays(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    speaker.send(url, "counted")
    [first] = speaker.receive(url, wait_seconds=2, attribute_names=["All"])
    assert first.attributes["ApproximateReceiveCount"] == "1"
    speaker.change_visibility(url, first.receipt_handle, 0)
    [second] = receive_within(speaker, url, 5.0, attribute_names=["All"])
    assert second.attributes["ApproximateReceiveCount"] == "2"
    speaker.change_visibility(url, second.receipt_handle, 0)
    [third] = receive_within(speaker, url, 5.0, attribute_names=["All"])
    assert third.attributes["ApproximateReceiveCount"] == "3"
    assert (
        first.attributes["ApproximateFirstReceiveTimestamp"]
        == second.attributes["ApproximateFirstReceiveTimestamp"]
        == third.attributes["ApproximateFirstReceiveTimestamp"]
    )
    assert third.attributes["SentTimestamp"] == first.attributes["SentTimestamp"]


def test_attribute_names_may_use_non_ascii_letters(speaker: Speaker, make_queue: Any) -> None:
    # AWS accepts "attr.1øßä" (LocalStack's test_sqs.py, recorded against SQS); the SQS
    # reference allows alphanumerics, `_`, `-` and `.`, letters in the Unicode sense.
    url = make_queue()
    attributes = {"attr.1øßä": {"DataType": "String", "StringValue": "v"}}
    sent = speaker.send(url, "body", message_attributes=attributes)
    assert sent.md5_of_message_attributes == md5_of_message_attributes(attributes)
    [message] = speaker.receive(url, wait_seconds=2, message_attribute_names=["All"])
    assert message.message_attributes == attributes
