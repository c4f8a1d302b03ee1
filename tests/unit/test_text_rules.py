"""Text and JSON from clients: the one character rule, bounded JSON, strict form decoding.

The character rule (`validation.validate_text`, the characters SQS allows in message bodies)
as it applies to every string a request decodes to, outside message content, which the
service checks entry by entry; JSON parsed with bounded depth and integer length; forms whose
escapes must be well formed UTF-8 and whose parameters are named once; integers converted
without Python's own limits showing through.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cqs.domain import errors
from cqs.domain.model import MessageAttributeValue
from cqs.domain.validation import (
    MAX_JSON_DEPTH,
    UnreadableJson,
    is_sqs_text,
    load_json,
    message_size,
    normalize_queue_attributes,
    validate_tag_keys,
    validate_tags,
    validate_text,
)
from cqs.sqs_api.protocol import (
    MalformedJson,
    RepeatedParameter,
    decode_json_request,
    decode_query_request,
)
from cqs.sqs_api.requests import ReceiveMessageRequest

INVALID_CHARACTERS = (
    "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF"
    " | #xE000 to #xFFFD | #x10000 to #x10FFFF."
)
ALLOWED = ["\t", "\n", "\r", " ", "~", "\u00e9", "\ud7ff", "\ue000", "\ufffd", "\U00010000",
           "\U0010ffff"]
REFUSED = ["\x00", "\x08", "\x0b", "\x0c", "\x1f", "\ud800", "\udfff", "\ufffe", "\uffff"]


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def json_request(body: dict[str, Any], action: str = "TagQueue") -> Any:
    return decode_json_request(f"AmazonSQS.{action}", json.dumps(body).encode())


# --- the character rule ----------------------------------------------------------------------

@pytest.mark.parametrize("character", ALLOWED)
def test_the_characters_sqs_allows_in_a_body_are_text(character: str) -> None:
    assert is_sqs_text(f"a{character}b")
    validate_text(f"a{character}b", "Tags")


@pytest.mark.parametrize("character", REFUSED)
def test_control_characters_surrogates_and_non_characters_are_not_text(character: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_text(f"a{character}b", "QueueUrl")

    assert raised.value.message == f"Value for parameter QueueUrl is invalid. Reason: {INVALID_CHARACTERS}"


def test_a_bad_name_is_reported_as_a_name_in_its_parameter() -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_text("k\x01", "Tags", is_name=True)

    assert raised.value.message == f"A name in Tags is invalid. Reason: {INVALID_CHARACTERS}"


# --- ... applied to every string a JSON request decodes to ------------------------------------

@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"QueueUrl": "q\ud800"}, "Value for parameter QueueUrl is invalid."),
        ({"QueueUrl": "q", "Tags": {"k": "v\x01"}}, "Value for parameter Tags.k is invalid."),
        ({"QueueUrl": "q", "Tags": {"k\ud800": "v"}}, "A name in Tags is invalid."),
        ({"QueueUrl": "q", "TagKeys": ["ok", "b\x1b"]}, "Value for parameter TagKeys.2 is invalid."),
        ({"QueueUrl": "q", "Attributes": {"Policy": '{"a": "\ud800"}'}},
         "Value for parameter Attributes.Policy is invalid."),
        ({"QueueUrl": "q", "Entries": [{"Id": "a\x00", "MessageBody": "x"}]},
         "Value for parameter Entries.1.Id is invalid."),
        ({"q\ud800": "x"}, "A name in the request is invalid."),
    ],
)
def test_every_json_string_outside_message_content_passes_the_character_rule(
    body: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        json_request(body)

    assert raised.value.message == f"{message} Reason: {INVALID_CHARACTERS}"


def test_message_content_is_left_to_the_service_so_a_bad_batch_entry_fails_alone() -> None:
    body = {"QueueUrl": "q", "Entries": [{
        "Id": "a", "MessageBody": "nul \x00",
        "MessageAttributes": {"n\ud800": {"DataType": "String", "StringValue": "\x01"}},
        "MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String",
                                                       "StringValue": "\x02"}},
    }]}

    decoded = json_request(body, "SendMessageBatch")

    assert decoded.json_body["Entries"][0]["MessageBody"] == "nul \x00"


def test_a_surrogate_in_a_message_counts_toward_its_size_instead_of_crashing() -> None:
    attributes = {"n\ud800": MessageAttributeValue("String", string_value="\udfff")}

    assert message_size("a\ud800", attributes) == (1 + 3) + (1 + 3) + 6 + 3


# --- ... and to every query parameter ---------------------------------------------------------

def test_every_form_name_and_value_outside_message_content_passes_the_character_rule() -> None:
    with pytest.raises(errors.InvalidParameterValue) as by_value:
        decode_query_request("", b"Action=TagQueue&QueueUrl=q&Tag.1.Key=k&Tag.1.Value=a%01")
    with pytest.raises(errors.InvalidParameterValue) as by_name:
        decode_query_request("", b"Action=ListQueues&a%1F=1")

    assert by_value.value.message.startswith("Value for parameter Tag.1.Value is invalid.")
    assert by_name.value.message.startswith("A name in the request is invalid.")
    decoded = decode_query_request(
        "", b"Action=SendMessage&QueueUrl=q&MessageBody=%00&MessageAttribute.1.Name=%01"
    )
    assert decoded.query_params["MessageBody"] == "\x00"


@pytest.mark.parametrize(
    "form",
    [b"Action=ListQueues&QueueNamePrefix=%ED%A0%80", b"Action=ListQueues&QueueNamePrefix=%FF",
     b"Action=ListQueues&%C3%28=x"],
)
def test_percent_encoded_bytes_that_are_not_utf8_are_malformed(form: bytes) -> None:
    with pytest.raises(errors.MalformedRequest) as raised:
        decode_query_request("", form)

    assert raised.value.message == (
        "The query string contains a syntax error: its percent-encoded bytes are not valid"
        " UTF-8."
    )


@pytest.mark.parametrize("escape", ["%ZZ", "%", "%4", "a%g0"])
def test_a_percent_without_two_hex_digits_is_a_syntax_error(escape: str) -> None:
    for query_string, body in ((f"Action=ListQueues&QueueNamePrefix={escape}", b""),
                               ("", f"Action=ListQueues&QueueNamePrefix={escape}".encode())):
        with pytest.raises(errors.MalformedRequest) as raised:
            decode_query_request(query_string, body)
        assert raised.value.message.startswith("The query string contains a syntax error")


def test_escapes_are_decoded_exactly_once() -> None:
    decoded = decode_query_request("Action=ListQueues&QueueNamePrefix=%2525", b"")

    assert decoded.query_params["QueueNamePrefix"] == "%25"


@pytest.mark.parametrize(
    ("query_string", "body"),
    [
        ("Action=ListQueues&Action=DeleteQueue", b""),
        ("", b"Action=DeleteQueue&QueueUrl=q&Action=ListQueues"),
        ("", b"Action=ListQueues&QueueNamePrefix=a&QueueNamePrefix=a"),
    ],
)
def test_a_parameter_named_twice_in_the_query_string_or_the_body_is_refused(
    query_string: str, body: bytes
) -> None:
    with pytest.raises(RepeatedParameter) as raised:
        decode_query_request(query_string, body)

    assert "is given more than once" in raised.value.message


# --- JSON: bounded depth and integers --------------------------------------------------------

def test_json_as_deep_as_the_limit_is_read_and_one_level_more_is_refused() -> None:
    assert load_json(nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(UnreadableJson) as raised:
        load_json(nested(MAX_JSON_DEPTH + 1))
    assert raised.value.reason == f"is nested more than {MAX_JSON_DEPTH} levels deep."


def test_json_nested_past_the_recursion_limit_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(UnreadableJson):
        load_json(nested(1_100))
    with pytest.raises(MalformedJson) as raised:
        decode_json_request("AmazonSQS.ListQueues", ('{"a": ' + nested(1_100) + "}").encode())
    assert raised.value.message == "The request body is nested more than 64 levels deep."


@pytest.mark.parametrize("attribute", ["Policy", "RedrivePolicy", "RedriveAllowPolicy"])
def test_a_queue_attribute_nested_past_the_limit_is_an_invalid_attribute_value(
    attribute: str,
) -> None:
    with pytest.raises(errors.InvalidAttributeValue) as raised:
        normalize_queue_attributes({attribute: nested(1_100)}, creating=True)

    assert raised.value.message == f"Invalid value for the parameter {attribute}."


def test_a_json_integer_of_thousands_of_digits_is_refused_in_plain_words() -> None:
    assert load_json(f"[{'9' * 40}, -{'9' * 40}]") == [int("9" * 40), -int("9" * 40)]
    with pytest.raises(MalformedJson) as raised:
        decode_json_request("AmazonSQS.ListQueues", b'{"MaxResults": ' + b"9" * 5000 + b"}")

    assert raised.value.message == "The request body has an integer of more than 40 digits."


def test_invalid_json_is_described_by_position_not_in_the_parser_s_words() -> None:
    with pytest.raises(MalformedJson) as raised:
        decode_json_request("AmazonSQS.ListQueues", b'{"QueueNamePrefix": }')
    with pytest.raises(MalformedJson) as not_utf8:
        decode_json_request("AmazonSQS.ListQueues", b'{"QueueNamePrefix": "\xff"}')

    assert raised.value.message == "The request body is not valid JSON (line 1, column 21)."
    assert not_utf8.value.message == "The request body is not valid UTF-8."


@pytest.mark.parametrize(
    ("text", "number"), [("7", 7), (" -3 ", -3), ("+4", 4), ("0" * 5000 + "2", 2)]
)
def test_query_integers_with_signs_spaces_and_leading_zeros_are_read(
    text: str, number: int
) -> None:
    request = ReceiveMessageRequest.from_query({"QueueUrl": "q", "MaxNumberOfMessages": text})

    assert request.receive.max_number_of_messages == number


@pytest.mark.parametrize("text", ["9" * 19, "9" * 5000, "ten", "\u0663", "1.5"])
def test_query_integers_past_18_digits_or_not_integers_are_refused_in_sqs_words(
    text: str,
) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        ReceiveMessageRequest.from_query({"QueueUrl": "q", "MaxNumberOfMessages": text})

    message = raised.value.message
    assert message.endswith(
        "for parameter MaxNumberOfMessages is invalid. Reason: must be an integer of at most 18"
        " digits."
    )
    assert "sys" not in message and len(message) < 200


# --- tags, whichever way they arrive ---------------------------------------------------------

def test_tags_of_control_characters_are_refused_by_the_service_rules_too() -> None:
    validate_tags({"team": "tab\tand\nnewline \U0001f600"})
    with pytest.raises(errors.InvalidParameterValue):
        validate_tags({"team": "a\x01b"})
    with pytest.raises(errors.InvalidParameterValue):
        validate_tags({"te\x00am": "blue"})
    with pytest.raises(errors.InvalidParameterValue):
        validate_tag_keys(["\ud800"])


def test_extension_targets_keep_their_prefix_so_no_sqs_action_name_can_reach_them() -> None:
    decoded = decode_json_request("CqsExtensions.PeekMessages", b'{"QueueUrl": "q"}')
    assert decoded.action == "CqsExtensions.PeekMessages"
    assert decode_json_request("AmazonSQS.SendMessage", b"{}").action == "SendMessage"
    for target in ("CqsExtensions.", "AmazonSQS.", "Other.SendMessage", "SendMessage"):
        with pytest.raises(errors.UnknownAction):
            decode_json_request(target, b"{}")
